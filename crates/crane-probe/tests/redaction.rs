//! `--redact values` against the facts the probe really collects: objects whose reprs carry
//! values (timestamps, decimals, paths, UUIDs, patterns, addresses, fractions) leave only
//! their types, shapes and counts in the rendered facts.

mod common;

use common::{facts, run_cell, start_kernel};
use crane_runtime::{render, Redact, RenderOptions};

#[tokio::test]
async fn redacted_values_leave_no_value_bearing_repr() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        r#"
import datetime, decimal, fractions, ipaddress, pathlib, re, uuid
import numpy as np, pandas as pd
when = pd.Timestamp('2031-07-04 05:06:07')
day = datetime.date(2031, 7, 4)
price = decimal.Decimal('1234.5678')
home = pathlib.Path('/home/secretuser/data.csv')
ident = uuid.UUID('12345678-1234-5678-1234-567812345678')
pattern = re.compile('secretpattern[0-9]+')
address = ipaddress.ip_address('10.1.2.3')
ratio = fractions.Fraction(355, 113)
frame = pd.DataFrame({'when': pd.to_datetime(['2031-07-04', '2032-01-01']), 'who': ['alice', 'bob'], 'amount': [1234.5678, 9.25]})
"#,
    )
    .await;
    let names = [
        "when", "day", "price", "home", "ident", "pattern", "address", "ratio", "frame",
    ];
    let info = facts(&mut kernel, &names).await;
    let shown = render(
        &info,
        &RenderOptions {
            budget_tokens: None,
            redact: Redact::None,
        },
    )
    .text;
    let secrets = [
        "2031",
        "1234.5678",
        "1234.57",
        "secretuser",
        "12345678",
        "secretpattern",
        "10.1.2.3",
        "355",
        "alice",
        "9.25",
    ];
    assert!(
        secrets.iter().any(|secret| shown.contains(secret)),
        "unredacted facts show values: {shown}"
    );
    let redacted = render(
        &info,
        &RenderOptions {
            budget_tokens: None,
            redact: Redact::Values,
        },
    )
    .text;
    for secret in secrets {
        assert!(!redacted.contains(secret), "{secret} in {redacted}");
    }
    for kept in [
        "shape=(2, 3)",
        "when",
        "who",
        "amount",
        "Timestamp",
        "Decimal",
    ] {
        assert!(redacted.contains(kept), "{kept} not in {redacted}");
    }
    kernel.close().await.expect("closes");
}
