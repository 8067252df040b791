//! One line of strace's output (`-f -y --timestamps=unix,ns --syscall-times=ns -X raw
//! -s 0`), taken apart: the thread, the time, and either a call (with its arguments as
//! tokens, its result and its duration), the start or the end of an interrupted call
//! (`<unfinished ...>`, `<... NAME resumed>`), a thread's exit or a signal.

/// What a line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body<'a> {
    /// `NAME(ARGS) = RESULT <DUR>`: whole, or put together from its two halves.
    Call(&'a [u8]),
    /// `NAME(ARGS <unfinished ...>`: the first half (without the marker).
    Unfinished(&'a [u8]),
    /// `<... NAME resumed>REST`: the second half.
    Resumed(&'a [u8]),
    /// `+++ exited with N +++` or `+++ killed by SIG +++`.
    Exited,
    /// A signal, or anything else strace says that is no call.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    pub pid: i64,
    pub ts_ns: i64,
    pub body: Body<'a>,
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' '] = s {
        s = rest;
    }
    s
}

/// Seconds with a decimal fraction (any number of digits) in nanoseconds.
pub fn parse_seconds(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(s).ok()?;
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs: i64 = int.parse().ok()?;
    let mut ns: i64 = 0;
    let mut scale = 100_000_000;
    for c in frac.bytes().take(9) {
        if !c.is_ascii_digit() {
            return None;
        }
        ns += i64::from(c - b'0') * scale;
        scale /= 10;
    }
    Some(secs * 1_000_000_000 + ns)
}

/// The next space-separated word of `s` (strace pads the pid with spaces) and the rest.
fn word(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let start = s.iter().position(|b| *b != b' ')?;
    let s = &s[start..];
    let end = s.iter().position(|b| *b == b' ')?;
    Some((&s[..end], &s[end + 1..]))
}

pub fn parse_line(line: &[u8]) -> Option<Line<'_>> {
    let (pid, rest) = word(line)?;
    let pid: i64 = std::str::from_utf8(pid).ok()?.parse().ok()?;
    let (ts, rest) = word(rest)?;
    let ts_ns = parse_seconds(ts)?;
    let body = if rest.starts_with(b"+++ ") {
        Body::Exited
    } else if rest.starts_with(b"--- ") {
        Body::Other
    } else if let Some(r) = rest.strip_prefix(b"<... ") {
        let at = find(r, b" resumed>")?;
        Body::Resumed(&r[at + b" resumed>".len()..])
    } else if let Some(first) = rest.strip_suffix(b" <unfinished ...>") {
        Body::Unfinished(first)
    } else if rest
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
    {
        Body::Call(rest)
    } else {
        Body::Other
    };
    Some(Line { pid, ts_ns, body })
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A call taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub name: &'a [u8],
    pub args: Vec<&'a [u8]>,
    /// The result's number (`?`: None), with its `<decoration>` when strace gave one.
    pub result: Option<i64>,
    pub result_decoration: Option<Vec<u8>>,
    /// The errno's name after a -1 (`ENOENT`).
    pub errno: Option<&'a [u8]>,
    pub dur_ns: u64,
}

/// `NAME(ARG, ARG) = RESULT [ERRNO (text)] <DUR>`.
pub fn parse_call(text: &[u8]) -> Option<Parsed<'_>> {
    let open = text.iter().position(|b| *b == b'(')?;
    let name = &text[..open];
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut quote = false;
    let mut start = open + 1;
    let mut i = open + 1;
    let close;
    loop {
        let c = *text.get(i)?;
        if quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                quote = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => quote = true,
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth > 0 => depth -= 1,
            b')' => {
                close = i;
                break;
            }
            b'<' if i > 0 && (text[i - 1].is_ascii_alphanumeric() || text[i - 1] == b']') => {
                i = skip_decoration(text, i)?;
                continue;
            }
            b'/' if text.get(i + 1) == Some(&b'*') => {
                i = find(&text[i..], b"*/").map(|p| i + p + 2)?;
                continue;
            }
            b',' if depth == 0 => {
                args.push(trim(&text[start..i]));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = trim(&text[start..close]);
    if !last.is_empty() || !args.is_empty() {
        args.push(last);
    }
    let rest = trim(&text[close + 1..]);
    let rest = trim(rest.strip_prefix(b"=")?);
    // the value runs to a space, or past its decoration (which may hold spaces)
    let mut end = rest
        .iter()
        .position(|b| *b == b' ' || *b == b'<')
        .unwrap_or(rest.len());
    if rest.get(end) == Some(&b'<') && end > 0 {
        end = skip_decoration(rest, end)?;
    }
    let (value, after) = rest.split_at(end);
    let (result, result_decoration) = if value == b"?" {
        (None, None)
    } else {
        let (n, deco) = number_and_decoration(value)?;
        (Some(n), deco)
    };
    let after = trim(after);
    let errno = if result == Some(-1) || result.is_none() {
        after
            .split(|b| *b == b' ')
            .next()
            .filter(|e| e.first().is_some_and(|c| c.is_ascii_uppercase()))
    } else {
        None
    };
    let dur_ns = match (after.iter().rposition(|b| *b == b'<'), after.last()) {
        (Some(p), Some(b'>')) => parse_seconds(&after[p + 1..after.len() - 1]).unwrap_or(0),
        _ => 0,
    };
    Some(Parsed {
        name,
        args,
        result,
        result_decoration,
        errno,
        dur_ns: dur_ns.max(0) as u64,
    })
}

/// From the `<` at `at`, past its matching `>` (decorations nest: `</dev/null<char 1:3>>`).
fn skip_decoration(text: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0;
    let mut i = at;
    loop {
        match *text.get(i)? {
            b'<' => depth += 1,
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'\\' => i += 1,
            _ => {}
        }
        i += 1;
    }
}

/// An integer as strace prints it: decimal, `0x` hex, `0` octal, negative; then, when
/// given, `<decoration>` (the descriptor's path with -y), unescaped.
pub fn number_and_decoration(tok: &[u8]) -> Option<(i64, Option<Vec<u8>>)> {
    let tok = trim(tok);
    let (num, deco) = match tok.iter().position(|b| *b == b'<') {
        Some(p) => (&tok[..p], Some(&tok[p..])),
        None => (tok, None),
    };
    let n = parse_int(num)?;
    let deco = match deco {
        Some(d) => {
            // the first level only: `/dev/null<char 1:3>` keeps `/dev/null`
            let inner = &d[1..d.len().saturating_sub(1)];
            let end = inner.iter().position(|b| *b == b'<').unwrap_or(inner.len());
            Some(unescape_c(&inner[..end])?)
        }
        None => None,
    };
    Some((n, deco))
}

pub fn parse_int(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(trim(s)).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let v = if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else if s == "AT_FDCWD" {
        -100
    } else if s == "NULL" {
        0
    } else {
        s.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// A C string as strace prints it (`"a\nb\303"`, perhaps followed by `...`): its bytes.
pub fn parse_string(tok: &[u8]) -> Option<Vec<u8>> {
    let tok = trim(tok);
    let tok = tok.strip_suffix(b"...").unwrap_or(tok);
    let inner = tok.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    unescape_c(inner)
}

/// strace's escapes: `\n \t \r \v \f \" \\`, octal `\NNN`, hex `\xHH`.
pub fn unescape_c(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let e = *s.get(i + 1)?;
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let h = std::str::from_utf8(s.get(i..i + 2)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                let mut k = 0;
                while k < 2 && s.get(i).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                    v = v * 8 + u32::from(s[i] - b'0');
                    i += 1;
                    k += 1;
                }
                out.push(u8::try_from(v).ok()?);
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// `key=value` of a named argument (`flags=0x3d0f00`), or of a struct's field.
pub fn field<'a>(tok: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut from = 0;
    while let Some(p) = find(&tok[from..], key) {
        let at = from + p;
        let before_ok = at == 0 || matches!(tok[at - 1], b'{' | b' ' | b',' | b'[');
        let after = &tok[at + key.len()..];
        if before_ok && after.first() == Some(&b'=') {
            let v = &after[1..];
            let end = v
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']'))
                .unwrap_or(v.len());
            return Some(trim(&v[..end]));
        }
        from = at + key.len();
    }
    None
}

/// The sum of every `iov_len=N` of an iovec array.
pub fn iov_total(tok: &[u8]) -> i64 {
    let mut total = 0;
    let mut rest = tok;
    while let Some(p) = find(rest, b"iov_len=") {
        rest = &rest[p + b"iov_len=".len()..];
        let end = rest
            .iter()
            .position(|b| !b.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        total += parse_int(&rest[..end]).unwrap_or(0);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_calls() {
        let l = parse_line(
            b"14157 1796561084.898757 openat(-100</tmp/st/we ird\\74x\\76>, \"a\\nb\", 0x241, 0666) = 3</tmp/st/we ird\\74x\\76/a\\nb> <0.000282>",
        )
        .expect("a line");
        assert_eq!(l.pid, 14157);
        assert_eq!(l.ts_ns, 1_796_561_084_898_757_000);
        let Body::Call(text) = l.body else {
            panic!("a call")
        };
        let c = parse_call(text).expect("parses");
        assert_eq!(c.name, b"openat");
        assert_eq!(c.args.len(), 4);
        let (fd, deco) = number_and_decoration(c.args[0]).expect("dirfd");
        assert_eq!(fd, -100);
        assert_eq!(deco.as_deref(), Some(&b"/tmp/st/we ird<x>"[..]));
        assert_eq!(parse_string(c.args[1]).as_deref(), Some(&b"a\nb"[..]));
        assert_eq!(parse_int(c.args[2]), Some(0x241));
        assert_eq!(parse_int(c.args[3]), Some(0o666));
        assert_eq!(c.result, Some(3));
        assert_eq!(
            c.result_decoration.as_deref(),
            Some(&b"/tmp/st/we ird<x>/a\nb"[..])
        );
        assert_eq!(c.dur_ns, 282_000);
    }

    #[test]
    fn errors_halves_and_structures() {
        let c = parse_call(b"newfstatat(-100</r>, \"/x\", 0x7ffc, 0) = -1 ENOENT (No such file or directory) <0.000086>").expect("parses");
        assert_eq!(c.result, Some(-1));
        assert_eq!(c.errno, Some(&b"ENOENT"[..]));
        assert_eq!(c.dur_ns, 86_000);
        assert!(matches!(
            parse_line(b"1 2.5 vfork( <unfinished ...>").map(|l| l.body),
            Some(Body::Unfinished(b"vfork("))
        ));
        assert!(matches!(
            parse_line(b"1 2.5 <... vfork resumed>) = 7 <0.1>").map(|l| l.body),
            Some(Body::Resumed(b") = 7 <0.1>"))
        ));
        assert!(matches!(
            parse_line(b"1 2.5 +++ exited with 0 +++").map(|l| l.body),
            Some(Body::Exited)
        ));
        // strace -f -o pads the pid: "9941  1796565403.068 ..."
        assert_eq!(
            parse_line(b"9941  2.5 +++ exited with 0 +++").map(|l| (l.pid, l.ts_ns)),
            Some((9941, 2_500_000_000))
        );
        let c = parse_call(b"writev(3</f>, [{iov_base=\"\"..., iov_len=10}, {iov_base=\"\"..., iov_len=0x20}], 2) = 42 <0.000001>").expect("writev");
        assert_eq!(c.args.len(), 3);
        assert_eq!(iov_total(c.args[1]), 42);
        let c = parse_call(b"getdents64(3</d>, 0x55 /* 5 entries, ) */, 32768) = 144 <0.000010>")
            .expect("getdents");
        assert_eq!(c.args.len(), 3);
        let c =
            parse_call(b"clone(child_stack=NULL, flags=0x1200011, child_tidptr=0x7f) = 9 <0.0001>")
                .expect("clone");
        assert_eq!(
            field(c.args[1], b"flags").and_then(parse_int),
            Some(0x1200011)
        );
        let c = parse_call(b"exit_group(0) = ?").expect("exit");
        assert_eq!(c.result, None);
        let c = parse_call(
            b"openat(-100</r>, \"/dev/null\", 0x241, 0666) = 3</dev/null<char 1:3>> <0.1>",
        )
        .expect("dev");
        assert_eq!(c.result_decoration.as_deref(), Some(&b"/dev/null"[..]));
        let c = parse_call(b"mmap(NULL, 8192, 0x3, 0x22, -1, 0) = 0x7f00aa000 <0.000002>")
            .expect("mmap");
        assert_eq!(c.result, Some(0x7f00aa000));
    }
}
