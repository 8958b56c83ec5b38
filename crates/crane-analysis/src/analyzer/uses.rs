//! What the walk records of the names a cell uses: attribute chains, constant subscripts,
//! operands and calls (a call of the cell's own function expands it there).

use super::*;

impl<'a> Analyzer<'a> {
    /// Visits a chain of attributes and subscripts read from left to right, recording the
    /// maximal attribute chains and every constant subscript.
    pub(super) fn visit_chain(&mut self, expr: &'a Expr, in_attribute_run: bool, called: bool) {
        match expr {
            Expr::Attribute(attribute) => {
                if !in_attribute_run {
                    self.record_attribute(expr, attribute, called);
                }
                self.visit_chain(&attribute.value, true, false);
            }
            Expr::Subscript(subscript) => {
                self.record_subscript(expr, subscript);
                self.visit_chain(&subscript.value, false, false);
                self.visit_expr(&subscript.slice);
            }
            other => self.visit_expr(other),
        }
    }

    pub(super) fn global_root(&self, expr: &Expr) -> Option<String> {
        let root = reference_root(expr)?;
        (self.resolve(&root.id) == Resolution::Global).then(|| root.id.to_string())
    }

    pub(super) fn record_attribute(
        &mut self,
        expr: &Expr,
        attribute: &ast::ExprAttribute,
        called: bool,
    ) {
        let Some(root) = self.global_root(expr) else {
            return;
        };
        let renderer = self.renderer();
        let rendered = renderer.render(expr);
        if !self.attribute_keys.insert((rendered.clone(), called)) {
            return;
        }
        let (line, column) = self.position(attribute);
        self.cell.attributes.push(AttributeRead {
            expr: rendered,
            root,
            attribute: attribute.attr.to_string(),
            owner: renderer.render(&attribute.value),
            called,
            line,
            column,
            called_from: self.called_from.clone(),
        });
    }

    pub(super) fn record_subscript(&mut self, expr: &Expr, subscript: &ast::ExprSubscript) {
        let Some(root) = self.global_root(expr) else {
            return;
        };
        let renderer = self.renderer();
        let rendered = renderer.render(expr);
        if !self.subscript_keys.insert(rendered.clone()) {
            return;
        }
        let indexer = match &*subscript.value {
            Expr::Attribute(attribute) => match attribute.attr.as_str() {
                "loc" => Some(Indexer::Loc),
                "iloc" => Some(Indexer::Iloc),
                "at" => Some(Indexer::At),
                "iat" => Some(Indexer::Iat),
                _ => None,
            },
            _ => None,
        };
        let (line, column) = self.position(subscript);
        self.cell.subscripts.push(SubscriptRead {
            expr: rendered,
            root,
            value: renderer.render(&subscript.value),
            key: renderer.render_key(&subscript.slice),
            key_constant: constant(&subscript.slice),
            indexer,
            line,
            column,
            called_from: self.called_from.clone(),
        });
    }

    pub(super) fn operand(&self, expr: &Expr) -> Operand {
        let renderer = self.renderer();
        let root = reference_root(expr);
        Operand {
            text: renderer.text(expr).to_owned(),
            kind: expr_kind(expr),
            expr: root.map(|_| renderer.render(expr)),
            constant: constant(expr),
            local: root.is_some_and(|root| self.resolve(&root.id) != Resolution::Global),
        }
    }

    pub(super) fn record_call(&mut self, call: &'a ast::ExprCall) {
        let renderer = self.renderer();
        let (receiver, method) = match &*call.func {
            Expr::Attribute(attribute) => (
                Some(renderer.render(&attribute.value)),
                Some(attribute.attr.to_string()),
            ),
            _ => (None, None),
        };
        let call_record = Call {
            callee: renderer.render(&call.func),
            receiver,
            method,
            args: call
                .arguments
                .args
                .iter()
                .map(|arg| self.operand(arg))
                .collect(),
            keywords: call
                .arguments
                .keywords
                .iter()
                .map(|keyword| KeywordArgument {
                    name: keyword.arg.as_ref().map(ToString::to_string),
                    value: self.operand(&keyword.value),
                })
                .collect(),
            line: self.line(call),
            called_from: self.called_from.clone(),
        };
        self.cell.calls.push(call_record);
    }

    pub(super) fn visit_call(&mut self, call: &'a ast::ExprCall) {
        self.record_call(call);
        match &*call.func {
            func @ Expr::Attribute(_) => self.visit_chain(func, false, true),
            func => self.visit_expr(func),
        }
        self.visit_arguments(&call.arguments);

        let line = self.line(call);
        match &*call.func {
            Expr::Name(name) => {
                if let Some(definition) = self.definition(&name.id) {
                    self.expand(definition, line);
                }
            }
            Expr::Attribute(attribute) => {
                let methods = self
                    .module
                    .methods
                    .get(attribute.attr.as_str())
                    .cloned()
                    .unwrap_or_default();
                for method in methods {
                    self.expand(method, line);
                }
            }
            _ => {}
        }
        // A cell-defined function passed as an argument is called by the callee.
        let passed = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value));
        for argument in passed {
            if let Expr::Name(name) = argument {
                if let Some(definition) = self.definition(&name.id) {
                    self.expand(definition, line);
                }
            }
        }
    }
}
