//! `stats` of capture files decodes on shard threads (`--threads`, one per
//! core by default): its report must be the one a single analyzer on one
//! thread makes. The reference is `stats --duration`, which reads a file
//! frame by frame through one `Analyzer` on the calling thread.

mod common;

use common::{bin, public_captures, shipped, two_points};

/// The report of `stats ARGS`, its standard error after it.
fn stats(args: &[&str]) -> (String, String) {
    let out = bin().arg("stats").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Every shipped capture alone, all of them read together, and the two
/// capture points of one run (`captures/two-points`, one connection seen
/// twice) in either order: the JSON report and standard error with 1, 2, 3
/// and 7 shard threads and the default equal the one-thread analysis'.
#[test]
fn any_number_of_threads_gives_the_one_thread_report() {
    let files = shipped();
    let mut runs: Vec<Vec<&str>> = files.iter().map(|f| vec![f.as_str()]).collect();
    runs.push(files.iter().map(String::as_str).collect());
    let points = two_points();
    if let Some([a, b]) = &points {
        runs.push(vec![a, b]);
        runs.push(vec![b, a]);
    }
    for files in &runs {
        let mut one = vec!["--format", "json", "--duration", "86400"];
        one.extend(files);
        let (reference, said) = stats(&one);
        assert!(reference.contains("\"messages\""), "{files:?}");
        if files.len() == 2 && files.iter().all(|f| f.contains("two-points")) {
            assert!(reference.contains("\"capture_points\""), "{files:?}");
        }
        for t in ["1", "2", "3", "7", ""] {
            let mut args = vec!["--format", "json"];
            if !t.is_empty() {
                args.extend(["--threads", t]);
            }
            args.extend(files);
            let (report, told) = stats(&args);
            assert!(
                report == reference,
                "{files:?} --threads {t}: reports differ"
            );
            assert_eq!(told, said, "{files:?} --threads {t}");
        }
    }
}

/// With a display filter (held until a request's response is known, its
/// fields read from the messages' trees), in text, on the shipped captures
/// together and on the public ones where present: the same.
#[test]
fn filtered_and_public_captures_too() {
    let files = shipped();
    let mut args: Vec<&str> = vec!["-Y", "fetch or produce or error"];
    args.extend(files.iter().map(String::as_str));
    let mut one = args.clone();
    one.extend(["--duration", "86400"]);
    let (reference, _) = stats(&one);
    assert!(reference.contains("Fetch"), "{reference}");
    for t in ["1", "4"] {
        let mut many = args.clone();
        many.extend(["--threads", t]);
        assert!(stats(&many).0 == reference, "filtered, --threads {t}");
    }
    let Some(pcaps) = public_captures() else {
        return;
    };
    for p in &pcaps {
        // Every port: the content decides what is Kafka.
        let (reference, said) = stats(&[
            "--format",
            "json",
            "--ports",
            "any",
            "--duration",
            "86400",
            p,
        ]);
        let (report, told) = stats(&["--format", "json", "--ports", "any", "--threads", "3", p]);
        assert!(report == reference, "{p}: reports differ");
        assert_eq!(told, said, "{p}");
    }
}
