//! `fnmatch`-style globs, as used for LFS patterns in mirrors.
//!
//! `*` matches any run of characters **including `/`**, `?` matches one
//! character, `[abc]`, `[a-z]` and `[!abc]` are character classes. This is
//! Python's `fnmatch.fnmatchcase`, which is also how `.gitattributes` patterns
//! without a `/` behave when matched against a basename.

/// Whether `text` matches the glob `pattern` (case-sensitive).
pub fn fnmatch(pattern: &str, text: &str) -> bool {
    let pat: Vec<char> = pattern.chars().collect();
    let txt: Vec<char> = text.chars().collect();
    match_from(&pat, &txt)
}

/// Iterative wildcard matching with single-star backtracking.
fn match_from(pat: &[char], txt: &[char]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while t < txt.len() {
        if p < pat.len() {
            match pat[p] {
                '*' => {
                    star = Some((p, t));
                    p += 1;
                    continue;
                }
                '?' => {
                    p += 1;
                    t += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = match_class(pat, p, txt[t]) {
                        if matched {
                            p = next;
                            t += 1;
                            continue;
                        }
                    } else if txt[t] == '[' {
                        // An unclosed `[` is a literal, as in Python.
                        p += 1;
                        t += 1;
                        continue;
                    }
                }
                c if c == txt[t] => {
                    p += 1;
                    t += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                p = sp + 1;
                t = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    pat[p..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `pat[start] == '['`. Returns
/// `(matched, index after the class)`, or `None` when the class is unclosed.
fn match_class(pat: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(pat.get(i), Some('!'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < pat.len() {
        if pat[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < pat.len() && pat[i + 1] == '-' && pat[i + 2] != ']' {
            if pat[i] <= c && c <= pat[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if pat[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::fnmatch;

    #[test]
    fn star_crosses_slashes() {
        assert!(fnmatch("*.so", "build/x/_ops.abi3.so"));
        assert!(fnmatch("build/torch-cuda/*", "build/torch-cuda/relu/x.py"));
        assert!(!fnmatch("*.so", "build/x/_ops.py"));
        assert!(fnmatch("*", ""));
    }

    #[test]
    fn classes_and_question_marks() {
        assert!(fnmatch("v?.[0-9]", "v1.5"));
        assert!(!fnmatch("v?.[!0-9]", "v1.5"));
        assert!(fnmatch("a[]]b", "a]b"));
        assert!(fnmatch("a[b", "a[b"));
    }
}
