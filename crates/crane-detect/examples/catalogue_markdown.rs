//! Print the rule catalogue as Markdown (the catalogue section of `docs/rules.md`):
//! `cargo run -p crane-detect --example catalogue_markdown`.

fn main() {
    let catalogue = crane_detect::rules::catalogue();
    println!("| code | name | library | raises | crash condition |");
    println!("| --- | --- | --- | --- | --- |");
    for rule in catalogue {
        println!(
            "| {} | `{}` | {} | `{}` | {} |",
            rule.code,
            rule.name,
            rule.library,
            rule.exception,
            rule.summary.replace('|', "\\|")
        );
    }
    for rule in catalogue {
        println!("\n### {} `{}`\n", rule.code, rule.name);
        println!(
            "{}",
            rule.explanation
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
        );
        println!("\n```python\n{}\n```", rule.example);
    }
}
