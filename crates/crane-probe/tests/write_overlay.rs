//! The sealed fork's write overlay, against a real ipykernel: new files a dry run writes through
//! Python (pandas, NumPy, matplotlib, json through pathlib, pickle, zip archives, `torch.save`)
//! stay in its memory and read back there (`os.stat` answers for them), so the crash after a
//! save is the cell's crash; nothing reaches the disk; writing over an existing file, listing
//! the directory of a file written in memory, a native reader's error after one and too much
//! written are attempts, never a crash.

mod common;

use std::path::Path;

use common::{eval_silent, ran_within, run_cell, start_with_pid};

use crane_kernel::KernelSession;
use crane_probe::dry_run::{DryRunReport, DryRunResult};

struct Kernel {
    session: KernelSession,
}

impl Kernel {
    async fn start(dir: &Path) -> Kernel {
        let mut kernel = Kernel {
            session: start_with_pid().await.0,
        };
        let setup = format!(
            "import os, json, pickle, pathlib, zipfile, glob\nimport numpy as np, pandas as pd\n\
             import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
             DIR = {:?}\ndf = pd.DataFrame({{'a': [1, 2, 3], 'b': [0.5, 1.5, 2.5]}})",
            dir.to_str().expect("utf-8 path")
        );
        run_cell(&mut kernel.session, &setup).await;
        kernel
    }

    async fn ran(&mut self, code: &str) -> DryRunReport {
        ran_within(&mut self.session, code, 90).await
    }

    /// A dry run the seal stopped: the line of its first attempt and what the attempts name.
    async fn blocked(&mut self, code: &str) -> (Option<u32>, String) {
        let report = self.ran(code).await;
        let DryRunResult::Blocked { attempts, .. } = &report.result else {
            panic!("{code}: not blocked: {report:?}");
        };
        let named = attempts
            .iter()
            .map(|attempt| attempt.what.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        (attempts[0].line, named)
    }

    async fn eval(&mut self, expression: &str) -> String {
        eval_silent(&mut self.session, expression).await.0
    }

    async fn close(self) {
        self.session.close().await.expect("shutdown");
    }
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            let path = entry.expect("entry").path();
            let bytes = std::fs::read(&path).unwrap_or_default();
            (path.display().to_string(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn new_files_written_through_python_read_back_in_the_fork_and_never_reach_the_disk() {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("kept.txt"), "kept").expect("write");
    let mut kernel = Kernel::start(dir.path()).await;
    let before = listing(dir.path());

    let code = "df.to_csv(DIR + '/table.csv', index=False)\n\
                back = pd.read_csv(DIR + '/table.csv')\n\
                np.save(DIR + '/weights.npy', np.arange(6.0).reshape(2, 3))\n\
                w = np.load(DIR + '/weights.npy')\n\
                pathlib.Path(DIR, 'config.json').write_text(json.dumps({'lr': 0.1}))\n\
                config = json.loads(pathlib.Path(DIR, 'config.json').read_text())\n\
                with open(DIR + '/log.txt', 'a') as log:\n    log.write('one\\n')\n\
                with open(DIR + '/log.txt', 'a') as log:\n    log.write('two\\n')\n\
                with open(DIR + '/model.pkl', 'wb') as out:\n    pickle.dump({'coef': [1, 2]}, out)\n\
                with zipfile.ZipFile(DIR + '/bundle.zip', 'w') as archive:\n    archive.writestr('a.txt', 'inside')\n\
                plt.plot([1, 2, 3])\nplt.savefig(DIR + '/curve.png')\n\
                print(back.shape, w.shape, config['lr'], open(DIR + '/log.txt').read().split(),\n\
                      pickle.load(open(DIR + '/model.pkl', 'rb'))['coef'],\n\
                      zipfile.ZipFile(DIR + '/bundle.zip').read('a.txt'),\n\
                      open(DIR + '/curve.png', 'rb').read(4), open(DIR + '/kept.txt').read(),\n\
                      os.path.isfile(DIR + '/table.csv'), os.path.getsize(DIR + '/log.txt'),\n\
                      pathlib.Path(DIR, 'nothing.txt').exists())";
    let report = kernel.ran(code).await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        report.stdout_tail,
        "(3, 2) (2, 3) 0.1 ['one', 'two'] [1, 2] b'inside' b'\\x89PNG' kept True 8 False\n"
    );
    assert_eq!(listing(dir.path()), before);

    // torch.save given a path writes through an opened file, in memory too.
    run_cell(&mut kernel.session, "import torch").await;
    let code = "model = torch.nn.Linear(3, 2)\n\
                torch.save(model.state_dict(), DIR + '/best.pt')\n\
                state = torch.load(DIR + '/best.pt')\nprint(sorted(state))";
    let report = kernel.ran(code).await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "['bias', 'weight']\n");
    assert_eq!(listing(dir.path()), before);
    // The kernel's own open, os.stat and torch.save are its own.
    assert_eq!(
        kernel
            .eval("(__import__('io').open is __import__('builtins').open is __import__('_io').open, os.stat.__module__, __import__('torch').save.__module__)")
            .await,
        "(True, 'posix', 'torch.serialization')"
    );
    kernel.close().await;
}

#[tokio::test]
async fn the_crash_after_a_save_is_the_cells_crash() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut kernel = Kernel::start(dir.path()).await;
    let code = "for epoch in range(3):\n    df.to_csv(DIR + f'/epoch{epoch}.csv')\n\
                plt.plot(df['a'])\nplt.savefig(DIR + '/curve.png')\ndf['accuracy'].max()";
    let report = kernel.ran(code).await;
    let exception = report.exception().expect("raised");
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("KeyError", Some(5)),
        "{report:?}"
    );
    assert!(listing(dir.path()).is_empty());
    kernel.close().await;
}

#[tokio::test]
async fn what_the_disk_would_show_differently_is_an_attempt() {
    let dir = tempfile::tempdir().expect("temporary directory");
    std::fs::write(dir.path().join("kept.txt"), "kept").expect("write");
    let mut kernel = Kernel::start(dir.path()).await;
    let before = listing(dir.path());
    let save = "df.to_csv(DIR + '/table.csv')\n";
    for (code, line, named) in [
        // An existing file is never shadowed: writing over it is trapped as before.
        (
            "with open(DIR + '/kept.txt', 'w') as out:\n    out.write('changed')".to_string(),
            1,
            "kept.txt",
        ),
        // Listing the directory of a file written in memory.
        (format!("{save}names = glob.glob(DIR + '/*.csv')\nnames[0]"), 2, "(scandir)"),
        (format!("{save}names = sorted(os.listdir(DIR))"), 2, "(listdir)"),
        // A native reader finds nothing there: its OSError, even wrapped, is no crash.
        (
            format!("{save}raw = np.fromfile(DIR + '/table.csv', dtype=np.uint8)"),
            2,
            "after writing",
        ),
        (
            format!(
                "{save}try:\n    np.fromfile(DIR + '/table.csv')\nexcept OSError as error:\n    raise ValueError('no table') from error"
            ),
            5,
            "after writing",
        ),
    ] {
        let (at, what) = kernel.blocked(&code).await;
        assert_eq!(at, Some(line), "{code}: {what}");
        assert!(what.contains(named), "{code}: {what}");
        assert_eq!(listing(dir.path()), before, "{code}");
    }

    // Too much written: ENOSPC, an attempt, whether or not the cell swallows it.
    kernel
        .eval("__import__('sys').modules['_crane_dryrun'].__dict__.__setitem__('_OVERLAY_MAX_BYTES', 1000)")
        .await;
    let (at, what) = kernel
        .blocked("try:\n    open(DIR + '/big.bin', 'wb').write(bytes(2000))\nexcept OSError:\n    pass\nx = 1")
        .await;
    assert_eq!(at, Some(2), "{what}");
    assert!(what.contains("more than 1000 bytes"), "{what}");
    assert_eq!(listing(dir.path()), before);
    kernel.close().await;
}

#[tokio::test]
async fn a_long_loop_that_saves_a_checkpoint_every_epoch_is_judged_to_its_crash() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut session = common::start_kernel().await;
    run_cell(
        &mut session,
        &format!(
            "import time, torch\ntorch.manual_seed(0)\nX = torch.randn(1000, 4)\nmodel = torch.nn.Linear(4, 1)\nDIR = {:?}",
            dir.path().to_str().expect("utf-8 path")
        ),
    )
    .await;
    // The last batch holds 40 rows: stacking the epoch's outputs fails after the 20th epoch,
    // each of which saved the model first.
    let code = "for epoch in range(20):\n    epoch_preds = []\n    for start in range(0, len(X), 64):\n        \
                time.sleep(0.01)\n        with torch.no_grad():\n            \
                epoch_preds.append(model(X[start:start + 64]).squeeze(1))\n    \
                torch.save(model.state_dict(), DIR + f'/epoch{epoch}.pt')\n\
                preds = torch.stack(epoch_preds)\n";
    let report = common::abridged_run(&mut session, code).await;
    let (exception, line, abridged) = common::raised_abridged(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(8)), "{abridged:?}");
    assert!(abridged.confirmed.is_some(), "{abridged:?}");
    assert!(listing(dir.path()).is_empty());
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn directories_made_in_memory_hold_files_list_and_go_away() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut kernel = Kernel::start(dir.path()).await;
    let code = "os.makedirs(DIR + '/runs/one', exist_ok=True)\n\
                os.makedirs(DIR + '/runs/one', exist_ok=True)\n\
                df.to_csv(DIR + '/runs/one/table.csv')\nnp.save(DIR + '/runs/w.npy', np.zeros(2))\n\
                walked = [(os.path.relpath(top, DIR), sorted(dirs), sorted(files)) for top, dirs, files in os.walk(DIR + '/runs')]\n\
                found = sorted(os.path.relpath(p, DIR) for p in glob.glob(DIR + '/runs/**/*.*', recursive=True))\n\
                print(walked, found, os.path.isdir(DIR + '/runs/one'), sorted(os.listdir(DIR + '/runs')))\n\
                import tempfile, shutil\nscratch = tempfile.mkdtemp(dir=DIR)\n\
                pathlib.Path(scratch, 'x.txt').write_text('x')\nshutil.rmtree(scratch)\n\
                os.remove(DIR + '/runs/w.npy')\n\
                print(os.path.exists(scratch), os.path.exists(DIR + '/runs/w.npy'))\n\
                try:\n    os.rmdir(DIR + '/runs')\nexcept OSError as error:\n    print(error.errno == __import__('errno').ENOTEMPTY)";
    let report = kernel.ran(code).await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        report.stdout_tail,
        "[('runs', ['one'], ['w.npy']), ('runs/one', [], ['table.csv'])] ['runs/one/table.csv', 'runs/w.npy'] True ['one', 'w.npy']\n\
         False False\nTrue\n"
    );
    assert!(listing(dir.path()).is_empty());
    kernel.close().await;
}

#[tokio::test]
async fn a_keras_model_saved_and_loaded_in_the_fork_is_judged_past_the_save() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let mut session = common::start_kernel().await;
    run_cell(
        &mut session,
        &format!(
            "import numpy as np, keras\nX = np.random.default_rng(0).random((64, 4)).astype('float32')\n\
             y = (X.sum(1) > 2).astype('float32')\nDIR = {:?}",
            dir.path().to_str().expect("utf-8 path")
        ),
    )
    .await;
    // A `.keras` file is a zip written through Python, its weights made in a scratch directory.
    let code = "model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, activation='sigmoid')])\n\
                model.compile('adam', 'binary_crossentropy')\nmodel.fit(X, y, epochs=2, verbose=0)\n\
                model.save(DIR + '/model.keras')\nback = keras.models.load_model(DIR + '/model.keras')\n\
                back.predict(X[:, :3], verbose=0)";
    let report = ran_within(&mut session, code, 120).await;
    let exception = report.exception().unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("ValueError", Some(6)),
        "{report:?}"
    );
    assert!(listing(dir.path()).is_empty());
    session.close().await.expect("shutdown");
}
