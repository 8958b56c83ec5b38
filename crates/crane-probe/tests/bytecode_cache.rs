//! The probe's compiled code is kept per Python bytecode version and loaded by later
//! injections. One test in its own binary: it points the cache at a temporary directory
//! through `XDG_CACHE_HOME` before anything else runs.

mod common;

use common::{eval_silent, facts, run_cell, start_kernel, var};
use crane_probe::PROBE_MODULE;
use crane_runtime::Kind;

#[tokio::test]
async fn the_first_injection_keeps_the_compiled_probe_and_later_ones_load_it() {
    let cache = tempfile::tempdir().expect("temporary directory");
    std::env::set_var("XDG_CACHE_HOME", cache.path());
    let probe_dir = cache.path().join("crane").join("probe");
    let cached = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(&probe_dir)
            .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default()
    };

    let mut first = start_kernel().await;
    let (magic, _) = eval_silent(
        &mut first,
        "__import__('sys').modules['_frozen_importlib_external'].MAGIC_NUMBER.hex()",
    )
    .await;
    crane_probe::inject(&mut first).await.expect("injects");
    let files = cached();
    let expected = format!(
        "{PROBE_MODULE}-{}-{}.hex",
        crane_probe::probe_digest(),
        magic.trim_matches('\'')
    );
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        files[0].file_name().unwrap().to_str(),
        Some(expected.as_str())
    );
    let compiled = std::fs::read_to_string(&files[0]).expect("readable");

    // A marked stand-in in the cache shows that the next injection loads the cache.
    let (marked, _) = eval_silent(
        &mut first,
        "__import__('marshal').dumps(compile('MARK = 42', '<m>', 'exec')).hex()",
    )
    .await;
    std::fs::write(&files[0], marked.trim_matches('\'')).expect("writes");
    first.close().await.expect("kernel shuts down");

    let mut second = start_kernel().await;
    crane_probe::inject(&mut second).await.expect("injects");
    let (mark, _) = eval_silent(
        &mut second,
        &format!("__import__('sys').modules['{PROBE_MODULE}'].MARK"),
    )
    .await;
    assert_eq!(mark, "42", "the cached code was loaded, not the source");

    // Damaged cache content: the kernel cannot load it, so the source is compiled again and
    // the cache repaired; the probe works.
    std::fs::write(&files[0], "00ff").expect("writes");
    eval_silent(
        &mut second,
        &format!("__import__('sys').modules.pop('{PROBE_MODULE}') and None"),
    )
    .await;
    run_cell(&mut second, "values = [1, 2]").await;
    let info = facts(&mut second, &["values"]).await;
    assert_eq!(var(&info, "values").kind, Kind::List);
    let repaired = std::fs::read_to_string(&files[0]).expect("readable");
    assert!(
        repaired.len() > compiled.len() / 2,
        "the compiled probe is back"
    );
    second.close().await.expect("kernel shuts down");
}
