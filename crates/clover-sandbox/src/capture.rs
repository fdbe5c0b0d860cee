//! Capped capture of a child's output: the head and the tail are kept, the middle is counted.

/// What a run wrote to one stream, capped while it was read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Captured {
    /// The first and last bytes of the stream; when the stream was longer than the cap, a
    /// marker line saying how many bytes were left out stands between them.
    pub bytes: Vec<u8>,
    /// How many bytes the stream had in all.
    pub total_bytes: u64,
    /// Whether bytes were left out.
    pub truncated: bool,
}

impl Captured {
    /// The captured bytes as text, invalid UTF-8 replaced.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    /// The last `max` bytes of the captured text, cut at a character boundary.
    pub fn tail(&self, max: usize) -> String {
        let text = self.text();
        if text.len() <= max {
            return text;
        }
        let mut start = text.len() - max;
        while !text.is_char_boundary(start) {
            start += 1;
        }
        text[start..].to_string()
    }
}

/// `text` cut to about `max` bytes the way a stream is: its head and its tail, with a line
/// between them saying how much was left out. A character cut in two becomes U+FFFD.
pub fn cap_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut kept = HeadTail::new(max);
    kept.push(text.as_bytes());
    kept.finish().text()
}

/// Keeps the first half of `cap` bytes and a ring of the last half, so a flood costs no more
/// memory than the cap however long it runs.
#[derive(Debug)]
pub struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    /// Next write position in `tail` once it is full.
    tail_pos: usize,
    total: u64,
}

impl HeadTail {
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        HeadTail {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: Vec::new(),
            tail_pos: 0,
            total: 0,
        }
    }

    pub fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if self.tail_cap == 0 || data.is_empty() {
            return;
        }
        if data.len() >= self.tail_cap {
            self.tail.clear();
            self.tail
                .extend_from_slice(&data[data.len() - self.tail_cap..]);
            self.tail_pos = 0;
            return;
        }
        for &b in data {
            if self.tail.len() < self.tail_cap {
                self.tail.push(b);
            } else {
                self.tail[self.tail_pos] = b;
                self.tail_pos = (self.tail_pos + 1) % self.tail_cap;
            }
        }
    }

    /// Counts bytes that were left out before they reached this capture (a stream another
    /// process already cut to its head and tail).
    pub fn set_total(&mut self, total: u64) {
        self.total = self.total.max(total);
    }

    pub fn finish(self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let truncated = self.total > kept;
        let mut bytes = self.head;
        if truncated {
            let skipped = self.total - kept;
            bytes.extend_from_slice(
                format!("\n[clover-sandbox: {skipped} bytes of output left out]\n").as_bytes(),
            );
        }
        bytes.extend_from_slice(&self.tail[self.tail_pos..]);
        bytes.extend_from_slice(&self.tail[..self.tail_pos]);
        Captured {
            bytes,
            total_bytes: self.total,
            truncated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = HeadTail::new(16);
        c.push(b"hello ");
        c.push(b"world");
        let out = c.finish();
        assert_eq!(out.bytes, b"hello world");
        assert!(!out.truncated);
        assert_eq!(out.total_bytes, 11);
    }

    #[test]
    fn long_output_keeps_head_and_tail() {
        let mut c = HeadTail::new(8);
        for chunk in b"0123456789abcdefghij".chunks(3) {
            c.push(chunk);
        }
        let out = c.finish();
        assert!(out.truncated);
        assert_eq!(out.total_bytes, 20);
        let text = out.text();
        assert!(
            text.starts_with("0123\n[clover-sandbox: 12 bytes"),
            "{text}"
        );
        assert!(text.ends_with("]\nghij"), "{text}");
    }

    #[test]
    fn capped_text_says_what_it_left_out() {
        assert_eq!(cap_text("short", 8), "short");
        let text = cap_text(&"é".repeat(100), 9);
        assert!(text.starts_with("éé"), "{text}");
        assert!(text.contains("[clover-sandbox: 191 bytes of output left out]"));
        assert!(text.ends_with('é') && text.len() < 80, "{text}");
    }

    #[test]
    fn one_huge_chunk_keeps_its_end() {
        let mut c = HeadTail::new(4);
        c.push(b"abcdefgh");
        c.push(b"x");
        let out = c.finish();
        assert!(out.text().starts_with("ab\n"));
        assert!(out.text().ends_with("hx"));
    }
}
