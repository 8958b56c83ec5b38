//! The traversal of a cell's statements and expressions: bindings, scopes, definitions,
//! imports and IPython escapes.

use super::*;

impl<'a> Analyzer<'a> {
    fn visit_target(&mut self, target: &'a Expr, kind: BindingKind) {
        match target {
            Expr::Name(name) => self.bind(&name.id, name, kind),
            Expr::Tuple(tuple) => {
                for elt in &tuple.elts {
                    self.visit_target(elt, kind);
                }
            }
            Expr::List(list) => {
                for elt in &list.elts {
                    self.visit_target(elt, kind);
                }
            }
            Expr::Starred(starred) => self.visit_target(&starred.value, kind),
            Expr::Attribute(attribute) => self.visit_chain(&attribute.value, false, false),
            Expr::Subscript(subscript) => {
                self.visit_chain(&subscript.value, false, false);
                self.visit_expr(&subscript.slice);
            }
            other => self.visit_expr(other),
        }
    }

    fn visit_comprehension_scope(
        &mut self,
        generators: &'a [Comprehension],
        elements: &[&'a Expr],
    ) {
        let Some(first) = generators.first() else {
            return;
        };
        self.visit_expr(&first.iter);
        let mut names = HashSet::new();
        for generator in generators {
            target_names(&generator.target, &mut names);
        }
        self.scopes.push(Scope::Names(names));
        for (index, generator) in generators.iter().enumerate() {
            if index > 0 {
                self.visit_expr(&generator.iter);
            }
            for condition in &generator.ifs {
                self.visit_expr(condition);
            }
        }
        for element in elements {
            self.visit_expr(element);
        }
        self.scopes.pop();
    }

    fn visit_function_def(&mut self, def: &'a ast::StmtFunctionDef) {
        for decorator in &def.decorator_list {
            self.visit_decorator_call(&decorator.expression);
        }
        self.visit_parameter_defaults(&def.parameters);
        for parameter in def.parameters.iter() {
            if let Some(annotation) = &parameter.as_parameter().annotation {
                self.visit_expr(annotation);
            }
        }
        if let Some(returns) = &def.returns {
            self.visit_expr(returns);
        }
        self.bind(&def.name, &def.name, BindingKind::FunctionDef);
        self.define(&def.name, DefinitionKind::Function(def));
    }

    fn visit_class_def(&mut self, class: &'a ast::StmtClassDef) {
        for decorator in &class.decorator_list {
            self.visit_decorator_call(&decorator.expression);
        }
        if let Some(arguments) = &class.arguments {
            self.visit_arguments(arguments);
        }
        self.scopes.push(Scope::Class {
            bound: HashSet::new(),
            globals: HashSet::new(),
        });
        self.visit_body(&class.body);
        self.scopes.pop();
        self.bind(&class.name, &class.name, BindingKind::ClassDef);
        self.define(&class.name, DefinitionKind::Class(class));
    }

    /// A decorator is called with the decorated object when the definition runs.
    fn visit_decorator_call(&mut self, decorator: &'a Expr) {
        self.visit_expr(decorator);
        if let Expr::Name(name) = decorator {
            if let Some(definition) = self.definition(&name.id) {
                let line = self.line(decorator);
                self.expand(definition, line);
            }
        }
    }

    fn visit_parameter_defaults(&mut self, parameters: &'a Parameters) {
        for parameter in parameters.iter_non_variadic_params() {
            if let Some(default) = &parameter.default {
                self.visit_expr(default);
            }
        }
    }

    fn visit_lambda(&mut self, lambda: &'a ast::ExprLambda) {
        if let Some(parameters) = &lambda.parameters {
            self.visit_parameter_defaults(parameters);
        }
        self.scopes
            .push(Scope::Names(parameter_names(lambda.parameters.as_deref())));
        self.visit_expr(&lambda.body);
        self.scopes.pop();
    }

    fn visit_import(&mut self, alias: &'a ast::Alias) {
        let bound = match &alias.asname {
            Some(asname) => asname.as_str(),
            None => alias.name.split('.').next().unwrap_or_default(),
        };
        self.bind(bound, alias, BindingKind::Import);
    }

    fn star_import(&mut self, module: String, node: &impl Ranged) {
        let line = self.line(node);
        self.module.after_star_import = true;
        self.cell.star_imports.push(StarImport { module, line });
    }

    fn visit_escape(&mut self, range: TextRange, kind: IpyEscapeKind, value: &'a str) {
        let line = self.line(&range);
        let (magic_kind, name, args) = match kind {
            IpyEscapeKind::Magic | IpyEscapeKind::Magic2 => {
                let (name, args) = split_name(value);
                let kind = if kind == IpyEscapeKind::Magic {
                    MagicKind::LineMagic
                } else {
                    MagicKind::CellMagic
                };
                (kind, name, args)
            }
            IpyEscapeKind::Shell | IpyEscapeKind::ShCap => {
                let (name, args) = split_name(value);
                (MagicKind::Shell, name, args)
            }
            IpyEscapeKind::Help | IpyEscapeKind::Help2 => (MagicKind::Help, value.trim(), ""),
            IpyEscapeKind::Quote | IpyEscapeKind::Quote2 | IpyEscapeKind::Paren => {
                let (name, args) = split_name(value);
                (MagicKind::AutoCall, name, args)
            }
        };
        let in_cell_text = std::ptr::eq(self.frame.text, self.cell_text);
        let body = if magic_kind == MagicKind::LineMagic && in_cell_text {
            self.magic_bodies.get(&range.start().to_usize())
        } else {
            None
        };
        self.cell.magics.push(Magic {
            kind: magic_kind,
            name: name.to_owned(),
            args: args.to_owned(),
            line,
            body_analyzed: body.is_some(),
        });
        if magic_kind == MagicKind::LineMagic {
            match name {
                "run" => {
                    let script = args.split_whitespace().find(|arg| !arg.starts_with('-'));
                    self.star_import(script.unwrap_or(args).to_owned(), &range);
                }
                "pylab" => self.star_import("pylab".to_owned(), &range),
                "store" => self.visit_store_magic(args, &range),
                _ => {}
            }
        }
        if let Some(body) = body {
            let outer = std::mem::replace(
                &mut self.frame,
                Frame {
                    text: &body.text,
                    base: body.frame_base,
                    exact: body.exact,
                },
            );
            self.visit_body(body.parsed.suite());
            self.frame = outer;
        }
    }

    /// `%store -r a b` restores `a` and `b`; `%store -r` restores everything stored.
    fn visit_store_magic(&mut self, args: &str, range: &TextRange) {
        let mut words = args.split_whitespace();
        if words.next() != Some("-r") {
            return;
        }
        let names: Vec<&str> = words.collect();
        if names.is_empty() {
            self.star_import("%store".to_owned(), range);
        }
        for name in names {
            self.bind(name, range, BindingKind::Magic);
        }
    }
}

impl<'a> Visitor<'a> for Analyzer<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => self.visit_function_def(def),
            Stmt::ClassDef(class) => self.visit_class_def(class),
            Stmt::Assign(assign) => {
                if let ([Expr::Name(target)], Expr::Lambda(lambda)) =
                    (assign.targets.as_slice(), &*assign.value)
                {
                    if let Some(parameters) = &lambda.parameters {
                        self.visit_parameter_defaults(parameters);
                    }
                    self.bind(&target.id, target, BindingKind::Assignment);
                    self.define(&target.id, DefinitionKind::Lambda(lambda));
                    return;
                }
                self.visit_expr(&assign.value);
                for target in &assign.targets {
                    self.visit_target(target, BindingKind::Assignment);
                }
            }
            Stmt::AugAssign(aug) => {
                match &*aug.target {
                    Expr::Name(name) => self.read_name(name),
                    target => self.visit_chain(target, false, false),
                }
                self.visit_expr(&aug.value);
                let operation = BinaryOperation {
                    operator: format!("{}=", aug.op.as_str()),
                    left: self.operand(&aug.target),
                    right: self.operand(&aug.value),
                    line: self.line(aug),
                    called_from: self.called_from.clone(),
                };
                self.cell.binary_operations.push(operation);
                if let Expr::Name(name) = &*aug.target {
                    self.bind(&name.id, name, BindingKind::AugmentedAssignment);
                }
            }
            Stmt::AnnAssign(ann) => {
                if let Some(value) = &ann.value {
                    self.visit_expr(value);
                }
                // Annotations of function locals are never evaluated.
                if !matches!(self.scopes.last(), Some(Scope::Function { .. })) {
                    self.visit_expr(&ann.annotation);
                }
                match (&*ann.target, &ann.value) {
                    (Expr::Name(name), Some(_)) => {
                        self.bind(&name.id, name, BindingKind::AnnotatedAssignment);
                    }
                    (Expr::Name(_), None) => {}
                    (target, _) => self.visit_target(target, BindingKind::AnnotatedAssignment),
                }
            }
            Stmt::For(for_stmt) => {
                self.visit_expr(&for_stmt.iter);
                self.visit_target(&for_stmt.target, BindingKind::For);
                self.visit_body(&for_stmt.body);
                self.visit_body(&for_stmt.orelse);
            }
            Stmt::With(with) => {
                for item in &with.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(target) = &item.optional_vars {
                        self.visit_target(target, BindingKind::With);
                    }
                }
                self.visit_body(&with.body);
            }
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    match target {
                        Expr::Name(name) => self.unbind(&name.id, name),
                        other => self.visit_target(other, BindingKind::Assignment),
                    }
                }
            }
            Stmt::Import(import) => {
                for alias in &import.names {
                    self.visit_import(alias);
                }
            }
            Stmt::ImportFrom(import) => {
                for alias in &import.names {
                    if alias.name.as_str() == "*" {
                        let module = format!(
                            "{}{}",
                            ".".repeat(import.level as usize),
                            import
                                .module
                                .as_ref()
                                .map(|m| m.as_str())
                                .unwrap_or_default()
                        );
                        self.star_import(module, import);
                    } else {
                        let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.bind(bound, alias, BindingKind::Import);
                    }
                }
            }
            Stmt::Global(global) => {
                for name in &global.names {
                    match self.scopes.last_mut() {
                        Some(Scope::Class { globals, .. }) => {
                            globals.insert(name.to_string());
                        }
                        None => {
                            let line = self.line(name);
                            self.cell.global_declarations.push(NameAt {
                                name: name.to_string(),
                                line,
                            });
                        }
                        // Function globals are collected before the body is walked.
                        Some(_) => {}
                    }
                }
            }
            Stmt::TypeAlias(alias) => {
                if let Expr::Name(name) = &*alias.name {
                    self.bind(&name.id, name, BindingKind::TypeAlias);
                }
            }
            Stmt::IpyEscapeCommand(escape) => {
                self.visit_escape(escape.range, escape.kind, &escape.value);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Name(name) => match name.ctx {
                ExprContext::Load => self.read_name(name),
                ExprContext::Store => self.bind(&name.id, name, BindingKind::Assignment),
                ExprContext::Del => self.unbind(&name.id, name),
                ExprContext::Invalid => {}
            },
            Expr::Attribute(attribute) => match attribute.ctx {
                ExprContext::Load => self.visit_chain(expr, false, false),
                _ => self.visit_chain(&attribute.value, false, false),
            },
            Expr::Subscript(subscript) => match subscript.ctx {
                ExprContext::Load => self.visit_chain(expr, false, false),
                _ => {
                    self.visit_chain(&subscript.value, false, false);
                    self.visit_expr(&subscript.slice);
                }
            },
            Expr::Call(call) => self.visit_call(call),
            Expr::BinOp(binary) => {
                let operation = BinaryOperation {
                    operator: binary.op.as_str().to_owned(),
                    left: self.operand(&binary.left),
                    right: self.operand(&binary.right),
                    line: self.line(binary),
                    called_from: self.called_from.clone(),
                };
                self.cell.binary_operations.push(operation);
                visitor::walk_expr(self, expr);
            }
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                self.visit_target(&named.target, BindingKind::Walrus);
            }
            Expr::Lambda(lambda) => self.visit_lambda(lambda),
            Expr::ListComp(comp) => self.visit_comprehension_scope(&comp.generators, &[&comp.elt]),
            Expr::SetComp(comp) => self.visit_comprehension_scope(&comp.generators, &[&comp.elt]),
            Expr::Generator(comp) => {
                self.visit_comprehension_scope(&comp.generators, &[&comp.elt]);
            }
            Expr::DictComp(comp) => {
                let elements: Vec<&Expr> = comp
                    .key
                    .as_deref()
                    .into_iter()
                    .chain([&*comp.value])
                    .collect();
                self.visit_comprehension_scope(&comp.generators, &elements);
            }
            Expr::IpyEscapeCommand(escape) => {
                self.visit_escape(escape.range, escape.kind, &escape.value);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
        let ExceptHandler::ExceptHandler(handler) = handler;
        if let Some(type_) = &handler.type_ {
            self.visit_expr(type_);
        }
        if let Some(name) = &handler.name {
            self.bind(name, name, BindingKind::ExceptHandler);
        }
        self.visit_body(&handler.body);
    }

    fn visit_pattern(&mut self, pattern: &'a Pattern) {
        visitor::walk_pattern(self, pattern);
        let name = match pattern {
            Pattern::MatchAs(pattern) => pattern.name.as_ref(),
            Pattern::MatchStar(pattern) => pattern.name.as_ref(),
            Pattern::MatchMapping(pattern) => pattern.rest.as_ref(),
            _ => None,
        };
        if let Some(name) = name {
            self.bind(name, name, BindingKind::MatchPattern);
        }
    }
}
