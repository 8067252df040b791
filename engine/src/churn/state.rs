//! What the churn keeps between calls (`.churn-state.json` in its dir), the live files in
//! creation order, and the seeded choices: a new file's size and place, and which file
//! a deletion removes.
//!
//! Every choice has its own random stream, derived from the seed and a counter kept in
//! the state: file number `id` draws its size, depth and directory from stream
//! (seed, FILE, id); deletion number `k` draws from stream (seed, DELETE, k). So a file's
//! name and size do not depend on how the calls were split, and the same seed and the
//! same calls on an empty directory make the same files.

use std::fs;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::spec::{MAX_DEPTH, Profile};
use crate::dist::{FastRng, Sampler, below, rng_for};
use crate::error::{Error, Result};

/// The state file, in the churn's dir.
pub const STATE_FILE: &str = ".churn-state.json";
/// Schema of the state file.
pub const STATE_SCHEMA: u32 = 1;

const SEED_DOMAIN_FILE: u64 = 0xC40F_11E0;
const SEED_DOMAIN_DELETE: u64 = 0xC4DE_1E7E;
/// Draws of a size above the limit before the size is cut to the limit.
const SIZE_TRIES: usize = 64;

/// A live file: (id, directory relative to the churn dir ("" for the dir itself), size).
/// Its name is `f<id>`; ids grow in creation order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveFile(pub u64, pub String, pub u64);

impl LiveFile {
    pub fn id(&self) -> u64 {
        self.0
    }

    pub fn dir(&self) -> &str {
        &self.1
    }

    pub fn size(&self) -> u64 {
        self.2
    }

    pub fn depth(&self) -> usize {
        depth_of(&self.1)
    }

    /// The path relative to the churn dir.
    pub fn rel_path(&self) -> String {
        if self.1.is_empty() {
            format!("f{}", self.0)
        } else {
            format!("{}/f{}", self.1, self.0)
        }
    }
}

fn depth_of(dir: &str) -> usize {
    if dir.is_empty() {
        0
    } else {
        dir.bytes().filter(|&b| b == b'/').count() + 1
    }
}

/// The state file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub schema: u32,
    pub seed: u64,
    pub profile: Profile,
    pub capacity_bytes: Option<u64>,
    /// Calls that finished (and the one running, while `in_progress`).
    pub calls: u64,
    /// Set while a call runs: a state still in progress when a call starts means the last
    /// one was killed and the directory no longer matches the list below.
    pub in_progress: bool,
    /// Number of the next file (files that hit ENOSPC used theirs up too).
    pub next_id: u64,
    /// Number of the next deletion.
    pub deletions: u64,
    pub written_bytes: u64,
    pub created: u64,
    pub deleted: u64,
    pub enospc_events: u64,
    /// The live files, oldest first.
    pub files: Vec<LiveFile>,
}

impl State {
    pub fn new(seed: u64, profile: Profile, capacity_bytes: Option<u64>) -> Self {
        State {
            schema: STATE_SCHEMA,
            seed,
            profile,
            capacity_bytes,
            calls: 0,
            in_progress: false,
            next_id: 0,
            deletions: 0,
            written_bytes: 0,
            created: 0,
            deleted: 0,
            enospc_events: 0,
            files: Vec::new(),
        }
    }

    /// Read `path`; Ok(None) if it does not exist.
    pub fn load(path: &Path) -> Result<Option<State>> {
        let f = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::runtime(format!("read {}: {e}", path.display()))),
        };
        let st: State = serde_json::from_reader(BufReader::new(f)).map_err(|e| {
            Error::runtime(format!("{}: not a churn state file: {e}", path.display()))
        })?;
        if st.schema != STATE_SCHEMA {
            return Err(Error::runtime(format!(
                "{}: state schema {} is not supported (this engine writes {STATE_SCHEMA})",
                path.display(),
                st.schema
            )));
        }
        Ok(Some(st))
    }

    /// Write to `path` atomically (a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> Result<()> {
        let tmp = PathBuf::from(format!("{}.tmp", path.display()));
        let write = || -> std::io::Result<()> {
            let mut w = BufWriter::new(fs::File::create(&tmp)?);
            serde_json::to_writer(&mut w, self).map_err(std::io::Error::other)?;
            w.write_all(b"\n")?;
            w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            fs::rename(&tmp, path)
        };
        write().map_err(|e| Error::runtime(format!("write {}: {e}", path.display())))
    }
}

/// The live files in creation order, with O(log n) "the k-th oldest" and removal: a
/// Fenwick tree counts the live slots; removed slots are compacted away once they
/// outnumber the live ones.
#[derive(Debug, Clone, Default)]
pub struct LiveFiles {
    slots: Vec<Option<LiveFile>>,
    /// Fenwick tree over `slots` (1 per live slot), 0-based storage of 1-based nodes.
    tree: Vec<u32>,
    live: usize,
    bytes: u64,
    by_depth: Vec<u64>,
}

impl LiveFiles {
    /// From a list in creation order (ids strictly increasing).
    pub fn new(files: Vec<LiveFile>) -> Result<Self> {
        if let Some(w) = files.windows(2).find(|w| w[0].id() >= w[1].id()) {
            return Err(Error::runtime(format!(
                "churn state: files out of creation order (f{} before f{})",
                w[0].id(),
                w[1].id()
            )));
        }
        let mut l = LiveFiles::default();
        for f in files {
            l.push(f);
        }
        Ok(l)
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Sum of the live files' sizes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Live files at each depth (index = depth).
    pub fn by_depth(&self) -> &[u64] {
        &self.by_depth
    }

    pub fn at_depth(&self, depth: usize) -> u64 {
        self.by_depth.get(depth).copied().unwrap_or(0)
    }

    fn prefix(&self, mut i: usize) -> u64 {
        let mut s = 0u64;
        while i > 0 {
            s += u64::from(self.tree[i - 1]);
            i &= i - 1;
        }
        s
    }

    /// Append the newest file.
    pub fn push(&mut self, f: LiveFile) {
        let d = f.depth();
        if self.by_depth.len() <= d {
            self.by_depth.resize(d + 1, 0);
        }
        self.by_depth[d] += 1;
        self.bytes += f.size();
        self.live += 1;
        self.slots.push(Some(f));
        let i = self.slots.len(); // 1-based node
        let low = i & i.wrapping_neg();
        let node = 1 + self.prefix(i - 1) - self.prefix(i - low);
        self.tree.push(node as u32);
    }

    /// The slot of the k-th oldest live file (k < len).
    fn select(&self, k: usize) -> usize {
        let n = self.tree.len();
        let mut pos = 0usize;
        let mut rem = k as u64 + 1;
        let mut step = if n == 0 { 0 } else { 1usize << n.ilog2() };
        while step > 0 {
            let next = pos + step;
            if next <= n && u64::from(self.tree[next - 1]) < rem {
                pos = next;
                rem -= u64::from(self.tree[next - 1]);
            }
            step >>= 1;
        }
        pos
    }

    /// The k-th oldest live file (k < len).
    pub fn get(&self, k: usize) -> Option<&LiveFile> {
        if k >= self.live {
            return None;
        }
        self.slots[self.select(k)].as_ref()
    }

    /// Remove the k-th oldest live file (k < len) and return it.
    pub fn remove(&mut self, k: usize) -> Option<LiveFile> {
        if k >= self.live {
            return None;
        }
        let slot = self.select(k);
        let f = self.slots[slot].take()?;
        let mut i = slot + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] -= 1;
            i += i & i.wrapping_neg();
        }
        self.live -= 1;
        self.bytes -= f.size();
        self.by_depth[f.depth()] -= 1;
        if self.slots.len() > 1024 && self.slots.len() > 2 * self.live {
            let files: Vec<LiveFile> = std::mem::take(&mut self.slots)
                .into_iter()
                .flatten()
                .collect();
            *self = LiveFiles::default();
            for f in files {
                self.push(f);
            }
        }
        Some(f)
    }

    /// The live files, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &LiveFile> {
        self.slots.iter().flatten()
    }

    /// The live files, oldest first.
    pub fn to_vec(&self) -> Vec<LiveFile> {
        self.slots.iter().flatten().cloned().collect()
    }
}

/// A uniform number on [0, 1) (53 random bits).
fn unit(rng: &mut FastRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The deletion rule: the rank (0 = oldest) of the file to delete among `n` live files,
/// floor(n * u^bias), for u uniform on [0, 1). P(rank < x*n) = x^(1/bias): with bias 2
/// the oldest quarter takes half of the deletions, the newest quarter 13%.
pub fn delete_rank(n: usize, u: f64, bias: f64) -> usize {
    let r = (n as f64 * u.powf(bias)).floor() as usize;
    r.min(n.saturating_sub(1))
}

/// The rank of the file that deletion number `k` removes from `n` live files.
pub fn pick_deletion(seed: u64, k: u64, n: usize, bias: f64) -> usize {
    let mut rng = rng_for(seed, SEED_DOMAIN_DELETE, k);
    delete_rank(n, unit(&mut rng), bias)
}

/// Samplers of a profile, with the size limit of this call.
#[derive(Debug, Clone)]
pub struct Model {
    seed: u64,
    size: Sampler,
    depth: Sampler,
    /// The largest size a file is drawn with.
    pub max_size: u64,
    dirwidth: u64,
    pub age_bias: f64,
}

/// A new file, as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draw {
    pub id: u64,
    pub size: u64,
    pub dir: String,
}

impl Model {
    /// `capacity`: the bytes fullness is measured against; a file is at most 1/16 of it.
    pub fn new(seed: u64, p: &Profile, capacity: u64) -> Result<Self> {
        let limit = p.max_size.unwrap_or(u64::MAX).min(capacity / 16).max(1);
        Ok(Model {
            seed,
            size: Sampler::new(&p.size)?,
            depth: Sampler::new(&p.depth)?,
            max_size: limit,
            dirwidth: p.dirwidth.max(1),
            age_bias: p.age_bias,
        })
    }

    /// File `id`: its size (drawn again while above `max_size`, at most 64 times, then
    /// cut to it), its depth (cut at 32), and its directory at that depth given the
    /// files that live there now.
    pub fn draw(&self, id: u64, live: &LiveFiles) -> Draw {
        let mut rng = rng_for(self.seed, SEED_DOMAIN_FILE, id);
        let mut size = self.size.sample(&mut rng);
        for _ in 1..SIZE_TRIES {
            if size <= self.max_size {
                break;
            }
            size = self.size.sample(&mut rng);
        }
        let size = size.min(self.max_size);
        let depth = self.depth.sample(&mut rng).min(MAX_DEPTH) as usize;
        let dir = place(depth, live.at_depth(depth), self.dirwidth, &mut rng);
        Draw { id, size, dir }
    }
}

/// The directory of a new file at `depth` when `at_depth` files live at that depth
/// already: the depth has ndirs = ceil((at_depth + 1) / dirwidth) directories, the new
/// file goes to one of them uniformly, j, and directory j is j's `depth` digits in base
/// f, the smallest fanout with f^depth >= ndirs ("d3/d0/d1"). The tree widens evenly as
/// the files grow; directories are never removed.
pub fn place(depth: usize, at_depth: u64, dirwidth: u64, rng: &mut FastRng) -> String {
    if depth == 0 {
        return String::new();
    }
    let ndirs = (at_depth + 1).div_ceil(dirwidth.max(1)).max(1);
    let d = depth as u32;
    let mut f = ((ndirs as f64).powf(1.0 / f64::from(d)).floor() as u64).max(1);
    while f.saturating_pow(d) < ndirs {
        f += 1;
    }
    let j = below(rng, ndirs);
    let mut out = String::with_capacity(depth * 4);
    for k in (0..d).rev() {
        let digit = (j / f.saturating_pow(k)) % f;
        if !out.is_empty() {
            out.push('/');
        }
        out.push('d');
        out.push_str(&digit.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::churn::spec::named_profile;
    use rand::SeedableRng;

    fn lf(id: u64, dir: &str, size: u64) -> LiveFile {
        LiveFile(id, dir.to_string(), size)
    }

    #[test]
    fn state_round_trip() {
        let dir = std::env::temp_dir().join(format!("churn-state-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join(STATE_FILE);
        assert_eq!(State::load(&path).expect("absent"), None);
        let mut st = State::new(7, named_profile("small").expect("small"), Some(1 << 24));
        st.calls = 2;
        st.next_id = 12;
        st.deletions = 4;
        st.written_bytes = 123_456;
        st.created = 11;
        st.deleted = 4;
        st.enospc_events = 1;
        st.files = vec![lf(3, "", 10), lf(5, "d0/d1", 0), lf(11, "d2", 99)];
        st.save(&path).expect("save");
        assert!(!dir.join(format!("{STATE_FILE}.tmp")).exists());
        let back = State::load(&path).expect("load").expect("present");
        assert_eq!(back, st);
        // the list is compact: [id, dir, size]
        let text = fs::read_to_string(&path).expect("read");
        assert!(text.contains(r#"[5,"d0/d1",0]"#), "{text}");
        fs::write(&path, "{\"schema\": 1}").expect("write");
        let e = State::load(&path).expect_err("bad state");
        assert!(e.msg.contains("not a churn state file"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn live_files_select_and_remove() {
        // against a plain Vec, through enough removals to compact
        let mut rng = FastRng::seed_from_u64(3);
        let mut naive: Vec<LiveFile> = Vec::new();
        let mut live = LiveFiles::default();
        let mut id = 0;
        for round in 0..20_000 {
            if naive.is_empty() || below(&mut rng, 100) < 55 - (round / 1000) as u64 {
                let f = lf(id, if id % 3 == 0 { "" } else { "d1/d2" }, id % 17);
                id += 1;
                naive.push(f.clone());
                live.push(f);
            } else {
                let k = below(&mut rng, naive.len() as u64) as usize;
                assert_eq!(live.get(k), Some(&naive[k]));
                assert_eq!(live.remove(k), Some(naive.remove(k)));
            }
            assert_eq!(live.len(), naive.len());
        }
        assert_eq!(live.to_vec(), naive);
        assert_eq!(live.bytes(), naive.iter().map(|f| f.size()).sum::<u64>());
        let deep = naive.iter().filter(|f| f.depth() == 2).count() as u64;
        assert_eq!(live.at_depth(2), deep);
        assert_eq!(live.at_depth(0), naive.len() as u64 - deep);
        assert_eq!(live.remove(naive.len()), None);
        assert!(LiveFiles::new(vec![lf(2, "", 1), lf(1, "", 1)]).is_err());
        let again = LiveFiles::new(naive.clone()).expect("in order");
        assert_eq!(again.to_vec(), naive);
    }

    #[test]
    fn deletion_rule_prefers_old_files() {
        assert_eq!(delete_rank(10, 0.0, 2.0), 0);
        assert_eq!(delete_rank(10, 0.999_999, 2.0), 9);
        assert_eq!(delete_rank(10, 0.5, 1.0), 5);
        assert_eq!(delete_rank(10, 0.5, 2.0), 2); // 10 * 0.25
        assert_eq!(delete_rank(1, 0.7, 2.0), 0);
        let n = 1000;
        let share = |bias: f64, lo: usize, hi: usize| {
            let picks = (0..100_000u64)
                .map(|k| pick_deletion(5, k, n, bias))
                .filter(|r| (lo..hi).contains(r))
                .count();
            picks as f64 / 100_000.0
        };
        let oldest = share(2.0, 0, 250);
        assert!((oldest - 0.5).abs() < 0.01, "oldest quarter {oldest}");
        let newest = share(2.0, 750, 1000);
        assert!((newest - (1.0 - 0.75f64.sqrt())).abs() < 0.01, "{newest}");
        let uniform = share(1.0, 0, 250);
        assert!((uniform - 0.25).abs() < 0.01, "bias 1: {uniform}");
        // seeded: the same deletion number picks the same rank
        assert_eq!(pick_deletion(9, 42, n, 2.0), pick_deletion(9, 42, n, 2.0));
    }

    #[test]
    fn placement_grows_the_tree_evenly() {
        let mut rng = FastRng::seed_from_u64(1);
        assert_eq!(place(0, 100, 20, &mut rng), "");
        // 20 files or fewer at depth 3: one directory, a chain
        assert_eq!(place(3, 19, 20, &mut rng), "d0/d0/d0");
        // 2000 files at depth 2: 100 directories, fanout 10, all of them used
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20_000 {
            let d = place(2, 1999, 20, &mut rng);
            assert_eq!(depth_of(&d), 2);
            seen.insert(d);
        }
        assert_eq!(seen.len(), 100);
        assert!(seen.contains("d9/d9") && !seen.contains("d10/d0"));
        // 101 directories at depth 2: fanout 11, the last one is j = 100 = 9 * 11 + 1
        let wider: std::collections::HashSet<String> =
            (0..20_000).map(|_| place(2, 2000, 20, &mut rng)).collect();
        assert_eq!(wider.len(), 101);
        assert!(wider.contains("d9/d1") && wider.contains("d0/d10") && !wider.contains("d9/d2"));
    }

    #[test]
    fn draws_are_seeded_and_limited() {
        let p = named_profile("default").expect("default");
        let m = Model::new(3, &p, 64 << 20).expect("model");
        assert_eq!(m.max_size, 4 << 20, "1/16 of the capacity");
        let live = LiveFiles::default();
        let a: Vec<Draw> = (0..2000).map(|i| m.draw(i, &live)).collect();
        let b: Vec<Draw> = (0..2000).map(|i| m.draw(i, &live)).collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|d| d.size <= 4 << 20));
        assert!(a.iter().any(|d| d.size > 1 << 20));
        let other = Model::new(4, &p, 64 << 20).expect("model");
        assert_ne!(
            a[..50],
            (0..50).map(|i| other.draw(i, &live)).collect::<Vec<_>>()[..]
        );
        let big = Model::new(3, &p, 1 << 40).expect("model");
        assert_eq!(big.max_size, 64 << 20, "the profile's max_size");
    }
}
