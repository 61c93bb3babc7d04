//! Comment stripping for Kafka's "JSON with comments".
//!
//! Kafka's message definitions are JSON plus `//` line comments (its own
//! parser also accepts `/* */` block comments). [`strip_comments`] removes
//! both, but only outside string literals, so that a strict JSON parser can
//! read the result. Line breaks are kept, so line numbers in parse errors
//! still point at the right line of the original file.

/// Returns `src` with every `//` line comment and `/* */` block comment that
/// lies outside a string literal removed.
///
/// A line comment is removed up to (not including) the end of its line. A
/// block comment is replaced by a single space, except that the line breaks it
/// spans are kept. Escapes inside strings (`\"`, `\\`) are honoured, so a quote
/// or a `//` inside a string never starts or ends anything. An unterminated
/// block comment swallows the rest of the input; the JSON parser then reports
/// whatever is missing.
pub fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    let mut in_string = false;
    let mut escaped = false;

    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                // Line comment: drop everything up to the line break.
                while let Some(&n) = chars.peek() {
                    if n == '\n' || n == '\r' {
                        break;
                    }
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                out.push(' ');
                let mut prev = '\0';
                for n in chars.by_ref() {
                    if n == '\n' || n == '\r' {
                        out.push(n);
                    }
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::strip_comments;

    #[test]
    fn removes_line_comments() {
        let src = "// header\n{ \"a\": 1, // trailing\n  \"b\": 2 }\n";
        assert_eq!(strip_comments(src), "\n{ \"a\": 1, \n  \"b\": 2 }\n");
    }

    #[test]
    fn keeps_slashes_inside_strings() {
        let src = r#"{ "url": "http://example.com//x" } // gone"#;
        assert_eq!(
            strip_comments(src),
            r#"{ "url": "http://example.com//x" } "#
        );
    }

    #[test]
    fn honours_escaped_quotes() {
        let src = r#"{ "a": "say \"//hi\" \\", "b": 1 } // c"#;
        assert_eq!(
            strip_comments(src),
            r#"{ "a": "say \"//hi\" \\", "b": 1 } "#
        );
    }

    #[test]
    fn removes_block_comments_keeping_lines() {
        let src = "{ /* one\ntwo */ \"a\": 1 }";
        assert_eq!(strip_comments(src), "{  \n \"a\": 1 }");
    }

    #[test]
    fn single_slash_and_crlf() {
        let src = "{ \"a\": \"1/2\" }\r\n// x\r\n";
        assert_eq!(strip_comments(src), "{ \"a\": \"1/2\" }\r\n\r\n");
    }

    #[test]
    fn comment_only_and_empty() {
        assert_eq!(strip_comments(""), "");
        assert_eq!(strip_comments("//"), "");
        assert_eq!(strip_comments("/"), "/");
    }

    #[test]
    fn result_parses() {
        let src = "// licence\n{\n  // note\n  \"name\": \"X\", // tail\n  \"v\": \"0+\"\n}\n";
        let v: serde_json::Value = serde_json::from_str(&strip_comments(src)).unwrap();
        assert_eq!(v["name"], "X");
        assert_eq!(v["v"], "0+");
    }
}
