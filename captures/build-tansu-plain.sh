#!/usr/bin/env bash
# Builds tansu 0.6.0 able to take SASL PLAIN logins, for record-d1-tls.sh plain.
#
#   captures/build-tansu-plain.sh ROOT     # installs ROOT/bin/tansu (about 20 minutes)
#
# tansu 0.6.0 judges PLAIN logins (tansu-auth's Callback::check) but builds its SASL
# library, rsasl, without the PLAIN mechanism, so a stock tansu answers a PLAIN
# SaslHandshake with UNSUPPORTED_SASL_MECHANISM. This builds the same broker from
# crates.io (tansu-cli 0.6.0 with dynostore and libsql, as `cargo install tansu
# --features dynostore,libsql` does) in a package that also asks rsasl for "plain":
# cargo builds one rsasl with both packages' features, so the broker offers PLAIN.
# tansu's check takes any password for PLAIN: the recording shows the exchange, not
# a password policy.
set -euo pipefail
ROOT=${1:?usage: build-tansu-plain.sh ROOT}
SRC=$(mktemp -d)
trap 'rm -rf "$SRC"' EXIT
mkdir -p "$SRC/src"
cat >"$SRC/Cargo.toml" <<'TOML'
[package]
name = "tansu-plain"
version = "0.6.0"
edition = "2024"
publish = false

[[bin]]
name = "tansu"
path = "src/main.rs"

[dependencies]
tansu-cli = { version = "=0.6.0", default-features = false, features = ["dynostore", "libsql"] }
tansu-broker = { version = "=0.6.0", default-features = false, features = ["dynostore", "libsql"] }
tansu-storage = { version = "=0.6.0", default-features = false, features = ["dynostore", "libsql"] }
rsasl = { version = "2.2", default-features = false, features = ["config_builder", "provider", "plain"] }
tokio = { version = "1", features = ["full"] }

[workspace]
TOML
cat >"$SRC/src/main.rs" <<'RS'
// tansu's command line, with rsasl's PLAIN mechanism built in (see build-tansu-plain.sh).
#[tokio::main]
async fn main() {
    if let Err(e) = tansu_cli::Cli::main().await {
        eprintln!("tansu: {e:?}");
        std::process::exit(1);
    }
}
RS
# tansu's own lock file, so the broker is built from the versions it was released with.
LOCK=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -path '*/tansu-0.6.0/Cargo.lock' | head -1)
if [ -n "$LOCK" ]; then cp "$LOCK" "$SRC/Cargo.lock"; fi
cargo install --path "$SRC" --root "$ROOT" --force
