//! The `kafkashark` binary end to end: `decode` and `print` on files shipped in
//! the repository, their output contracts and exit codes.

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_kafkashark"))
}

fn repo(p: &str) -> String {
    format!("{}/../{p}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn decode_prints_the_seed_tree() {
    let out = bin()
        .args([
            "decode",
            &repo("captures/messages/produce-v12-request-minimal.hex"),
        ])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let first = text.lines().next().expect("a line");
    assert!(first.starts_with("ProduceRequest"), "{first}");
    assert!(first.ends_with("[0x0000, 94B]"), "{first}");
    assert!(text.contains("= 0 (Produce)"));
    assert!(text.contains("crc32c of the bytes that follow"));
    assert_eq!(text.lines().count(), 40);
}

#[test]
fn decode_json_has_the_contract_keys() {
    let out = bin()
        .args([
            "decode",
            &repo("captures/messages/produce-v12-request-minimal.hex"),
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["kind"], "request");
    assert_eq!(v["api_key"], 0);
    assert_eq!(v["api_version"], 12);
    assert_eq!(v["correlation_id"], 0);
    let f = &v["fields"];
    assert_eq!(f["offset"], 0);
    assert_eq!(f["length"], 94);
    let header = &f["children"][1];
    assert_eq!(header["name"], "RequestHeader");
    assert_eq!(header["children"][0]["name"], "request_api_key");
    assert_eq!(header["children"][0]["value"], 0);
    assert_eq!(header["children"][0]["offset"], 4);
    assert_eq!(header["children"][0]["length"], 2);
}

#[test]
fn decode_hex_response_and_malformed_exit_code() {
    // A Produce v13 response cut short: the tree up to the cut is printed, exit 1.
    let out = bin()
        .args([
            "decode",
            "--hex",
            "0000000a 00000007 00 02",
            "--response",
            "--api-key",
            "0",
            "--api-version",
            "13",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("correlation_id"), "{text}");
    assert!(text.contains("MALFORMED"), "{text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("decode error"), "{err}");
}

#[test]
fn unreadable_input_names_the_file() {
    let out = bin()
        .args(["print", "/nonexistent/capture.pcap"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/capture.pcap"), "{err}");
}

#[test]
fn print_jsonl_on_a_shipped_capture() {
    let path = repo("captures/a2-confluent-compression-codecs.pcap");
    let out = bin()
        .args(["print", &path, "--format", "jsonl"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    // The tshark reading beside the capture counts 74 Kafka PDUs.
    assert_eq!(lines.len(), 74);
    let keys = [
        "frame",
        "first_frame",
        "ts",
        "stream",
        "client",
        "broker",
        "kind",
        "api_key",
        "api_name",
        "api_version",
        "correlation_id",
        "length",
        "paired",
        "decode_error",
    ];
    for l in &lines {
        for k in keys {
            assert!(l.get(k).is_some(), "missing {k} in {l}");
        }
        assert!(l["decode_error"].is_null(), "{l}");
        assert!(l["paired"].as_bool().expect("bool"), "{l}");
        if l["kind"] == "response" {
            assert!(l["latency_ms"].as_f64().expect("latency") >= 0.0);
            assert!(l.get("throttle_time_ms").is_some());
            assert!(l["error_codes"].is_array());
        }
    }
    // Frames are in capture order.
    let frames: Vec<u64> = lines
        .iter()
        .map(|l| l["frame"].as_u64().expect("frame"))
        .collect();
    assert!(frames.windows(2).all(|w| w[0] <= w[1]));
    let produce = lines
        .iter()
        .filter(|l| l["api_name"] == "Produce" && l["kind"] == "request")
        .count();
    assert!(produce >= 5, "{produce} produce requests");
}

#[test]
fn print_verbose_shows_records_of_every_codec() {
    let path = repo("captures/a2-confluent-compression-codecs.pcap");
    let out = bin().args(["print", &path, "-V"]).output().expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        // The batch's records node names the codec and what it inflated to…
        let inflated = text.lines().any(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            // `records: 413 bytes → 5035 bytes  gzip  [#0:0x…+413]`
            t.windows(7).any(|w| {
                w[0] == "records:"
                    && w[1].parse::<u64>().is_ok()
                    && w[3] == "→"
                    && w[4].parse::<u64>().is_ok_and(|n| n > 0)
                    && w[6] == codec
            })
        });
        assert!(inflated, "no {codec} batch shown decompressed");
        // …and the records inside show the values the producer wrote
        // (`{"codec": "gzip", …}`, quotes escaped in the text view).
        assert!(
            text.contains(&format!(r#"\"codec\": \"{codec}\""#)),
            "no {codec} record value shown"
        );
    }
    assert!(!text.contains("MALFORMED"));
    assert!(
        !text.contains('\u{1b}'),
        "no raw escape characters reach the terminal"
    );
}

#[test]
fn print_count_stops_early() {
    let path = repo("captures/a1-kcat-produce-consume-group.pcap");
    let out = bin()
        .args(["print", &path, "-c", "3"])
        .output()
        .expect("run");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
}

#[test]
fn stats_json_follows_the_contract() {
    let path = repo("captures/b2-errors-and-acks0.pcap");
    let out = bin()
        .args(["stats", &path, "--format", "json"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let apis = v["apis"].as_array().expect("apis");
    for a in apis {
        for k in [
            "api_key",
            "api_name",
            "requests",
            "responses",
            "unpaired",
            "latency_ms",
            "throttled",
            "throttle_time_ms",
            "errors",
        ] {
            assert!(a.get(k).is_some(), "missing {k} in {a}");
        }
        if !a["latency_ms"].is_null() {
            for k in ["p50", "p90", "p99", "max"] {
                assert!(a["latency_ms"][k].is_number(), "{a}");
            }
        }
        assert!(
            a["throttle_time_ms"]["max"].is_number() && a["throttle_time_ms"]["sum"].is_number()
        );
    }
    let create = apis
        .iter()
        .find(|a| a["api_name"] == "CreateTopics")
        .expect("CreateTopics");
    assert_eq!(create["errors"]["TOPIC_ALREADY_EXISTS"], 1);
    for k in ["clients", "groups", "topics", "hints"] {
        assert!(v[k].is_array(), "missing {k}");
    }
}

#[test]
fn notices_follow_the_messages_printed_before_them() {
    // stdout and stderr into one pipe: the notice about the unanswered Metadata
    // request at frame 262 must come after that request's own line, not before
    // the buffered lines ahead of it.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' print '{}' 2>&1",
            env!("CARGO_BIN_EXE_kafkashark"),
            repo("captures/a1-kcat-produce-consume-group.pcap")
        ))
        .output()
        .expect("sh runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let notice = lines
        .iter()
        .position(|l| l.contains("request at frame 262 (Metadata v12) got no response"))
        .expect("the notice is printed");
    let request = lines
        .iter()
        .position(|l| l.trim_start().starts_with("262 ") && l.contains("Metadata v12 Request"))
        .expect("the request is printed");
    assert!(
        request < notice,
        "notice at line {notice} before its request at line {request}"
    );
    // The notice is not merely last: messages printed after it exist too.
    assert!(notice > 0 && notice + 1 < lines.len(), "{text}");
}

/// `-f` is a BPF filter for live capture: on a file it is refused with a
/// message, not silently ignored.
#[test]
fn bpf_filter_without_interface_is_refused() {
    let path = repo("captures/a1-kcat-produce-consume-group.pcap");
    for cmd in ["print", "stats"] {
        let out = bin()
            .args([cmd, &path, "-f", "tcp port 9092"])
            .output()
            .expect("run");
        assert!(!out.status.success(), "{cmd}: accepted -f on a file");
        assert!(out.stdout.is_empty(), "{cmd}: printed output");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--interface"), "{cmd}: {err}");
    }
}

/// `print -V` of a file goes through the render threads; with `--duration`
/// it takes the one-thread path live capture takes (summaries read by the
/// analyzer, each tree decoded as its message is printed). Both print the
/// same bytes, stdout and stderr, on every shipped capture, in both formats,
/// on the Kafka port and on any port.
#[test]
fn print_verbose_one_thread_equals_the_render_threads() {
    let dir = repo("captures");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("captures/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 10, "{paths:?}");
    let mut trees = 0;
    for p in &paths {
        let file = p.to_str().expect("utf-8 path");
        for format in ["text", "jsonl"] {
            for ports in [&[][..], &["--ports", "any"][..]] {
                let run = |extra: &[&str]| {
                    let out = bin()
                        .args(["print", "-V", "--format", format])
                        .args(ports)
                        .args(extra)
                        .arg(file)
                        .output()
                        .expect("run");
                    (out.status.code(), out.stdout, out.stderr)
                };
                let pool = run(&[]);
                let one = run(&["--duration", "3600"]);
                assert_eq!(pool.0, one.0, "{file} {format} {ports:?}: exit code");
                assert!(pool.1 == one.1, "{file} {format} {ports:?}: stdout differs");
                assert_eq!(
                    String::from_utf8_lossy(&pool.2),
                    String::from_utf8_lossy(&one.2),
                    "{file} {format} {ports:?}: stderr"
                );
                let key: &[u8] = if format == "jsonl" {
                    b"\"fields\":"
                } else {
                    b"RequestHeader"
                };
                trees += pool.1.windows(key.len()).filter(|w| *w == key).count();
            }
        }
    }
    assert!(trees > 1000, "{trees} trees compared");
}

/// librdkafka 2.16's Metadata v12 requests carry 3 bytes after their body:
/// a warning in every output, apart from the decode error.
#[test]
fn trailing_bytes_are_a_warning_in_every_output() {
    let cap = repo("captures/a5-ipv6-confluent-admin-produce-consume.pcap");
    let run = |args: &[&str]| {
        let out = bin().args(args).arg(&cap).output().expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let warning = "3 bytes after the body at 0x001b, ignored by the broker";

    let jsonl = run(&["print", "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let warned: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|v| v.get("decode_warning").is_some())
        .collect();
    assert_eq!(warned.len(), 2);
    for v in warned {
        assert_eq!(v["decode_warning"], warning);
        assert_eq!(v["decode_error"], serde_json::Value::Null);
        assert_eq!(v["api_name"], "Metadata");
    }

    let text = run(&["print"]);
    let marked: Vec<&str> = text.lines().filter(|l| l.contains("[warning: ")).collect();
    assert_eq!(marked.len(), 2, "{text}");
    assert!(marked
        .iter()
        .all(|l| l.contains(warning) && !l.contains("malformed")));

    let tree = run(&["print", "-V"]);
    assert_eq!(
        tree.lines()
            .filter(|l| l.contains("trailing bytes") && l.contains("[0x1b+3]"))
            .count(),
        2
    );

    let stats: serde_json::Value =
        serde_json::from_str(&run(&["stats", "--format", "json"])).expect("json");
    let w = &stats["warnings"];
    assert_eq!(w.as_array().map(Vec::len), Some(1), "{w}");
    assert_eq!(
        w[0]["warning"],
        "bytes after the body, ignored by the broker"
    );
    assert_eq!(
        (w[0]["api_name"].as_str(), w[0]["api_version"].as_i64()),
        (Some("Metadata"), Some(12))
    );
    assert_eq!(
        (w[0]["count"].as_u64(), w[0]["first_frame"].as_u64()),
        (Some(2), Some(27))
    );
    assert!(run(&["stats"]).contains("WARNINGS"));
}

/// Kafka on 19092 is found without `--ports`, as with it; a capture of HTTP,
/// TLS and a length-prefixed JSON protocol (captures/record-c1-not-kafka.sh)
/// yields no message, and every command says so with its busiest ports.
#[test]
fn kafka_is_found_on_any_port_and_its_absence_said() {
    let b1 = repo("captures/b1-port-19092-mixed-clients.pcap");
    let run = |args: &[&str]| bin().args(args).output().expect("run");
    let found = run(&["print", &b1, "--format", "jsonl"]);
    let given = run(&["print", &b1, "--format", "jsonl", "--ports", "19092"]);
    assert!(found.status.success() && given.status.success());
    assert!(!found.stdout.is_empty());
    assert_eq!(found.stdout, given.stdout);
    assert_eq!(found.stderr, given.stderr);
    assert!(!String::from_utf8_lossy(&found.stderr).contains("no Kafka"));
    // Forced to 9092: nothing, and the port that carried the traffic named.
    let forced = run(&["print", &b1, "--ports", "9092"]);
    assert!(forced.status.success() && forced.stdout.is_empty());
    let said = String::from_utf8_lossy(&forced.stderr);
    assert!(said.contains("busiest ports: 19092 ("), "{said}");
    assert!(said.contains("--ports 19092"), "{said}");

    let c1 = repo("captures/negative/c1-not-kafka.pcap");
    for args in [
        &["print", &c1][..],
        &["print", &c1, "--ports", "any"],
        &["print", &c1, "-V", "--format", "jsonl"],
        &["stats", &c1, "--format", "json"],
    ] {
        let out = run(args);
        assert!(out.status.success(), "{args:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("no Kafka found in 73 TCP segments"),
            "{args:?}: {said}"
        );
        for port in ["18443 (", "18080 (", "16379 ("] {
            assert!(said.contains(port), "{args:?}: {said}");
        }
        if args[0] == "print" {
            assert!(out.stdout.is_empty(), "{args:?}");
        } else {
            let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(r["summary"]["messages"], 0);
        }
    }
}

/// A mistyped command is named, `-h` is `--help` everywhere, and no help
/// points to a file the repository does not have.
#[test]
fn typos_are_named_and_help_is_one_text() {
    let run = |args: &[&str]| bin().args(args).output().expect("run");
    for (typo, meant) in [(&["stast"][..], "stats"), (&["prnt", "x.pcap"], "print")] {
        let out = run(typo);
        assert_eq!(out.status.code(), Some(2), "{typo:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("did you mean `kafkashark {meant}`?")),
            "{said}"
        );
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for sub in [&[][..], &["print"], &["stats"], &["live"], &["decode"]] {
        let short = run(&[sub, &["-h"]].concat());
        let long = run(&[sub, &["--help"]].concat());
        assert!(short.status.success(), "{sub:?}");
        assert_eq!(short.stdout, long.stdout, "{sub:?}");
        let text = String::from_utf8_lossy(&long.stdout);
        // Every file a help text names is in the repository.
        for word in text.split(|c: char| c.is_whitespace() || "(),\"`".contains(c)) {
            if word.ends_with(".md") {
                assert!(root.join(word).exists(), "{sub:?} names {word}");
            }
        }
        assert!(!text.contains("DESIGN.md"), "{sub:?}");
    }
}

/// A live capture refused for want of privileges names the two fixes
/// (docs/security.md). Run as root, the binary is started as `nobody`
/// without capabilities (setpriv); otherwise as the user running the tests.
#[test]
fn a_refused_live_capture_names_root_and_setcap() {
    let is_root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    });
    let mut cmd = if is_root {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ]);
        c.arg(env!("CARGO_BIN_EXE_kafkashark"));
        c
    } else {
        bin()
    };
    let out = match cmd
        .args(["print", "-i", "lo", "-c", "1", "--duration", "1"])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("setpriv not runnable ({e}): skipped");
            return;
        }
    };
    let said = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        eprintln!("this user may capture on lo: nothing refused ({said})");
        return;
    }
    if !said.contains("kafkashark: interface lo: ") {
        // `nobody` could not run the binary (a target directory it may not
        // enter), or there is no loopback: nothing of kafkashark's to check.
        eprintln!("kafkashark did not get to open lo: skipped ({said})");
        return;
    }
    assert!(
        said.contains("not permitted") || said.contains("ermission"),
        "{said}"
    );
    assert!(said.contains("needs root"), "{said}");
    assert!(
        said.contains("setcap cap_net_raw,cap_net_admin+eip"),
        "{said}"
    );
}

/// Marks of pairing and framing in `print`'s text: an unanswered request is
/// `[unpaired]`; an acks=0 Produce the broker answered is an anomaly, the
/// others expect nothing; a mid-stream start that skipped nothing is not a
/// resync.
#[test]
fn pairing_marks_say_what_happened() {
    let text = |path: &str| {
        let out = bin().args(["print", path]).output().expect("run");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let b1 = text(&repo("captures/b1-port-19092-mixed-clients.pcap"));
    let unanswered: Vec<&str> = b1
        .lines()
        .filter(|l| l.contains("Request") && l.ends_with("[unpaired]"))
        .collect();
    assert_eq!(unanswered.len(), 1, "{unanswered:?}");
    assert!(
        unanswered[0].trim_start().starts_with("261 "),
        "{}",
        unanswered[0]
    );
    let b2 = text(&repo("captures/b2-errors-and-acks0.pcap"));
    let answered: Vec<&str> = b2
        .lines()
        .filter(|l| l.contains("[answered, though no response was expected]"))
        .collect();
    let expected_none = b2
        .lines()
        .filter(|l| l.contains("[no response expected]"))
        .count();
    assert_eq!(answered.len(), 1, "{answered:?}");
    assert!(
        answered[0].contains("Produce v11 Request  corr=17"),
        "{}",
        answered[0]
    );
    assert!(expected_none > 0);
    let shared = repo("../shared/captures/public/deepflow__00-produce-v9.pcap");
    if std::path::Path::new(&shared).exists() {
        let out = bin()
            .args(["print", &shared, "--ports", "any"])
            .output()
            .expect("run");
        let t = String::from_utf8_lossy(&out.stdout);
        assert_eq!(t.lines().count(), 2, "{t}");
        assert!(!t.contains("[resync"), "{t}");
    }
}

/// `print -Y` and `stats -Y` keep what the display filter matches, a
/// request tested with its response's facts (docs/filter.md), checked
/// against the unfiltered JSONL read independently; a bad filter is refused
/// with its column.
#[test]
fn display_filters_choose_messages_in_print_and_stats() {
    let path = repo("captures/a1-kcat-produce-consume-group.pcap");
    let jsonl = |extra: &[&str]| -> Vec<serde_json::Value> {
        let out = bin()
            .args([&["print", &path, "--format", "jsonl"][..], extra].concat())
            .output()
            .expect("run");
        assert!(out.status.success(), "{extra:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let all = jsonl(&[]);
    let key = |m: &serde_json::Value| {
        (
            m["stream"].as_u64(),
            m["correlation_id"].as_i64(),
            m["kind"].as_str().map(str::to_string),
        )
    };
    // An api: exactly its messages.
    let produce = jsonl(&["-Y", "produce"]);
    let expected: Vec<_> = all
        .iter()
        .filter(|m| m["api_name"] == "Produce")
        .map(key)
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(produce.iter().map(key).collect::<Vec<_>>(), expected);
    // Latency: the slow responses and the requests they answered, in capture order.
    let slow: Vec<_> = (all.iter())
        .filter(|m| m["latency_ms"].as_f64().is_some_and(|l| l > 400.0))
        .map(|m| (m["stream"].as_u64(), m["correlation_id"].as_i64()))
        .collect();
    let expected: Vec<_> = (all.iter())
        .filter(|m| slow.contains(&(m["stream"].as_u64(), m["correlation_id"].as_i64())))
        .map(key)
        .collect();
    assert!(slow.len() >= 2, "{slow:?}");
    assert_eq!(
        jsonl(&["-Y", "latency>400ms"])
            .iter()
            .map(key)
            .collect::<Vec<_>>(),
        expected
    );
    // The same through the render threads of -V.
    let verbose = jsonl(&["-V", "-Y", "latency>400ms"]);
    assert_eq!(verbose.iter().map(key).collect::<Vec<_>>(), expected);
    // stats counts what print prints.
    let out = bin()
        .args(["stats", &path, "--format", "json", "-Y", "produce"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["summary"]["messages"].as_u64(),
        Some(produce.len() as u64)
    );
    assert_eq!(r["summary"]["unanswered"].as_u64(), Some(0));
    let apis: Vec<&str> = r["apis"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["api_name"].as_str())
        .collect();
    assert_eq!(apis, ["Produce"]);
    // A request's "no response" notice goes with the request.
    let said = |f: &str| {
        let out = bin().args(["print", &path, "-Y", f]).output().expect("run");
        String::from_utf8_lossy(&out.stderr).contains("frame 262 (Metadata v12) got no response")
    };
    assert!(said("metadata") && !said("produce"));
    // A filter that does not parse.
    for cmd in ["print", "stats"] {
        let out = bin()
            .args([cmd, &path, "-Y", "prodcue"])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2));
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("col 0: unknown api or keyword 'prodcue'; did you mean 'Produce'?"),
            "{said}"
        );
    }
}

/// A capture of a1's requests only (tcpdump drops the broker's packets):
/// every request goes unanswered; `print` lists the first five notices and
/// counts the rest in one line, `--notices all` lists every one.
#[test]
fn repeated_notices_are_summarised() {
    let cut = std::env::temp_dir().join(format!("ks-requests-only-{}.pcap", std::process::id()));
    let made = Command::new("tcpdump")
        .args([
            "-r",
            &repo("captures/a1-kcat-produce-consume-group.pcap"),
            "-w",
        ])
        .arg(&cut)
        .arg("not src port 9092")
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        eprintln!("tcpdump not runnable: skipped");
        return;
    }
    let stderr = |extra: &[&str]| {
        let out = bin()
            .args([&["print", cut.to_str().unwrap()][..], extra].concat())
            .output()
            .expect("run");
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let (summary, all) = (stderr(&[]), stderr(&["--notices", "all"]));
    let _ = std::fs::remove_file(&cut);
    let unanswered = |t: &str| t.lines().filter(|l| l.ends_with("got no response")).count();
    let n = unanswered(&all);
    assert!(n > 20, "{all}");
    assert_eq!(unanswered(&summary), 5, "{summary}");
    let last = summary.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "{n} requests got no response in all, the first at frame "
        )) && last.ends_with("5 listed, `--notices all` lists every one"),
        "{last}"
    );
    assert!(!all.contains("in all"), "{all}");
}

/// `-t`: tshark's time formats. Deltas add up to the relative times; `-V`'s
/// summary lines (written by several render threads, chunk by chunk) carry
/// the same deltas as the plain lines; UTC and epoch times name the same
/// instant.
#[test]
fn print_writes_times_as_tshark_does() {
    let cap = repo("captures/b6-consumer-lag.pcap");
    // The summary lines: frame number, time, stream (`-V`'s tree lines
    // between them start otherwise).
    let head = |l: &str| {
        let mut w = l.split_whitespace();
        w.next().is_some_and(|f| f.parse::<u64>().is_ok())
            && w.next()
                .is_some_and(|t| t.parse::<f64>().is_ok() || t.contains('-'))
            && w.next()
                .is_some_and(|s| s.starts_with('s') || s.contains(':'))
    };
    let times = |args: &[&str]| -> Vec<String> {
        let out = bin()
            .arg("print")
            .arg(&cap)
            .args(args)
            .output()
            .expect("run");
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .filter(|l| head(l))
            .map(|l| l.to_string())
            .collect()
    };
    let rel = times(&["-t", "r"]);
    let delta = times(&["-t", "d"]);
    assert!(rel.len() > 1000, "{}", rel.len());
    assert_eq!(rel.len(), delta.len());
    let secs = |l: &str| -> f64 {
        l.split_whitespace()
            .nth(1)
            .expect("time")
            .parse()
            .expect("seconds")
    };
    let mut sum = secs(&rel[0]);
    for (r, d) in rel.iter().zip(&delta).skip(1) {
        sum += secs(d);
        assert!((sum - secs(r)).abs() < 2e-6 * rel.len() as f64, "{r} / {d}");
    }
    // The same deltas with -V (trees between the lines).
    assert_eq!(times(&["-t", "d", "-V"]), delta);
    // Epoch and UTC date: the same instant.
    let epoch = times(&["-t", "e"]);
    let utc = times(&["-t", "ud"]);
    let e: f64 = epoch[0]
        .split_whitespace()
        .nth(1)
        .expect("epoch")
        .parse()
        .expect("f64");
    let days = (e / 86_400.0).floor() as i64;
    let sod = e - days as f64 * 86_400.0;
    let clock = format!(
        "{:02}:{:02}:{:02}",
        (sod / 3600.0) as u32,
        (sod / 60.0) as u32 % 60,
        sod as u32 % 60
    );
    let fields: Vec<&str> = utc[0].split_whitespace().collect();
    assert!(fields[2].starts_with(&clock), "{} vs {}", utc[0], epoch[0]);
    assert_eq!(fields[1].len(), 10, "a date: {}", utc[0]);
    // A bad format says which ones there are.
    let out = bin()
        .args(["print", &cap, "-t", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("possible values") && err.contains("ad"),
        "{err}"
    );
}
