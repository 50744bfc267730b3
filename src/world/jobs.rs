//! The world's table of candidate pairs ("jobs"), kept from step to step: a job of two
//! sides that did not change keeps its answer (Klosowski et al. 1998, §6.1, temporal
//! coherence), so a step must reach the jobs of its changed objects and parts without a
//! pass over the others. Each job sits in a slot of one array (freed slots reused) and in
//! two doubly linked lists, one per side, headed by the side's slot index: the contact
//! graph of Box2D and of rapier, with `u32` links.

use super::{ObjectKey, PartKey, ShapeKey};
use slotmap::KeyData;

/// A handle's slot index.
pub(super) fn slot(k: impl slotmap::Key) -> u32 {
    k.data().as_ffi() as u32
}

/// A link that names no job.
const NONE: u32 = u32::MAX;
/// The `prev[0]` of a free slot.
const FREE: u32 = u32::MAX - 1;

/// One candidate pair: an object, and an object or part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Job {
    Objects(ObjectKey, ObjectKey),
    Part(ObjectKey, PartKey),
}

/// Where one job's contacts are: in the world's list of them (`Frame::arena`), or, for a
/// job computed this step, in its batch's list until the step is merged.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct JobOut {
    pub(super) start: u32,
    pub(super) len: u32,
}

/// A job with its sort key ([`Keyed::key`]), in 24 bytes: the key's halves, and the
/// versions of its two sides' handles, which with the key's slot indices make the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Keyed {
    hi: u64,
    lo: u64,
    a_version: u32,
    b_version: u32,
}

const _: () = assert!(size_of::<Keyed>() == 24);

impl Keyed {
    /// `job`, whose first object is of `shape`.
    pub(super) fn new(shape: ShapeKey, job: Job) -> Self {
        use slotmap::Key;
        let (a, kind, b) = match job {
            Job::Objects(a, b) => (a.data(), 0, b.data()),
            Job::Part(a, p) => (a.data(), 1, p.data()),
        };
        let version = |k: KeyData| (k.as_ffi() >> 32) as u32;
        Keyed {
            hi: u64::from(slot(shape)) << 32 | (a.as_ffi() & 0xffff_ffff),
            lo: kind << 63 | u64::from(version(b) & 0x7fff_ffff) << 32 | (b.as_ffi() & 0xffff_ffff),
            a_version: version(a),
            b_version: version(b),
        }
    }

    /// A job's place in the order: its first object's shape, that object, its kind and
    /// its other side, by slot index (which live items do not share) and, below the other
    /// side's index, its version's low bits. One integer, so that sorting a step's new
    /// jobs compares one value, not handles field by field; jobs of one shape computed
    /// side by side share its hierarchy in the caches.
    #[inline]
    pub(super) fn key(&self) -> u128 {
        u128::from(self.hi) << 64 | u128::from(self.lo)
    }

    /// The job: slot indices from the key ([`Keyed::key`]), versions kept beside it.
    #[inline]
    pub(super) fn job(&self) -> Job {
        let handle =
            |version: u32, slot: u32| KeyData::from_ffi(u64::from(version) << 32 | u64::from(slot));
        let a = ObjectKey::from(handle(self.a_version, self.hi as u32));
        let b = handle(self.b_version, self.lo as u32);
        if self.lo >> 63 == 0 {
            Job::Objects(a, ObjectKey::from(b))
        } else {
            Job::Part(a, PartKey::from(b))
        }
    }
}

/// A job in the table: the job, where its answer is, and its links in its two sides'
/// lists (`[a's, b's]`; a free slot's `next[0]` is the next free slot).
#[derive(Clone, Copy, Debug)]
struct Rec {
    keyed: Keyed,
    out: JobOut,
    next: [u32; 2],
    prev: [u32; 2],
}

/// Which of a job's lists a side's list is: an object's list holds its jobs as either
/// side, a part's only as the second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    /// The object of slot index `.0`.
    Object(u32),
    /// The part of slot index `.0`.
    Part(u32),
}

impl Rec {
    /// The object or part whose list link `side` belongs to.
    fn owner(&self, side: usize) -> Side {
        if side == 0 {
            Side::Object(self.keyed.hi as u32)
        } else if self.keyed.lo >> 63 == 0 {
            Side::Object(self.keyed.lo as u32)
        } else {
            Side::Part(self.keyed.lo as u32)
        }
    }

    /// The link of this job in `owner`'s list.
    fn side_of(&self, owner: Side) -> usize {
        usize::from(self.owner(0) != owner)
    }
}

/// The jobs; see the module page.
#[derive(Debug)]
pub(super) struct JobTable {
    recs: Vec<Rec>,
    /// The first free slot ([`NONE`] when none is).
    free: u32,
    live: usize,
    /// The first job in each object's and each part's list, by slot index.
    object_heads: Vec<u32>,
    part_heads: Vec<u32>,
}

impl Default for JobTable {
    fn default() -> Self {
        JobTable {
            recs: Vec::new(),
            free: NONE,
            live: 0,
            object_heads: Vec::new(),
            part_heads: Vec::new(),
        }
    }
}

impl JobTable {
    /// Number of jobs.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    fn head(&mut self, owner: Side) -> &mut u32 {
        let (heads, i) = match owner {
            Side::Object(i) => (&mut self.object_heads, i as usize),
            Side::Part(i) => (&mut self.part_heads, i as usize),
        };
        if heads.len() <= i {
            heads.resize(i + 1, NONE);
        }
        &mut heads[i]
    }

    /// Adds `keyed` with its answer at `out`; its slot.
    pub(super) fn insert(&mut self, keyed: Keyed, out: JobOut) -> u32 {
        let rec = Rec {
            keyed,
            out,
            next: [NONE; 2],
            prev: [NONE; 2],
        };
        let n = if self.free == NONE {
            self.recs.push(rec);
            (self.recs.len() - 1) as u32
        } else {
            let n = self.free;
            self.free = self.recs[n as usize].next[0];
            self.recs[n as usize] = rec;
            n
        };
        for side in 0..2 {
            let owner = rec.owner(side);
            let h = std::mem::replace(self.head(owner), n);
            self.recs[n as usize].next[side] = h;
            if h != NONE {
                let r = &mut self.recs[h as usize];
                r.prev[r.side_of(owner)] = n;
            }
        }
        self.live += 1;
        n
    }

    /// Takes job `n` (live) out; its slot is free.
    pub(super) fn remove(&mut self, n: u32) {
        let rec = self.recs[n as usize];
        debug_assert!(rec.prev[0] != FREE, "job {n} is free");
        for side in 0..2 {
            let owner = rec.owner(side);
            let (p, x) = (rec.prev[side], rec.next[side]);
            if p == NONE {
                *self.head(owner) = x;
            } else {
                let r = &mut self.recs[p as usize];
                r.next[r.side_of(owner)] = x;
            }
            if x != NONE {
                let r = &mut self.recs[x as usize];
                r.prev[r.side_of(owner)] = p;
            }
        }
        let r = &mut self.recs[n as usize];
        r.prev[0] = FREE;
        r.next[0] = self.free;
        self.free = n;
        self.live -= 1;
    }

    /// Removes every job (cheaper than one by one).
    pub(super) fn clear(&mut self) {
        self.recs.clear();
        self.free = NONE;
        self.live = 0;
        self.object_heads.fill(NONE);
        self.part_heads.fill(NONE);
    }

    /// Calls `f` with the slot of every job in `owner`'s list.
    pub(super) fn each_of(&self, owner: Side, mut f: impl FnMut(u32)) {
        let heads = match owner {
            Side::Object(i) => self.object_heads.get(i as usize),
            Side::Part(i) => self.part_heads.get(i as usize),
        };
        let mut n = heads.copied().unwrap_or(NONE);
        while n != NONE {
            f(n);
            let r = &self.recs[n as usize];
            n = r.next[r.side_of(owner)];
        }
    }

    /// Every job: its slot, the job and its answer.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, &Keyed, JobOut)> {
        self.recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.prev[0] != FREE)
            .map(|(n, r)| (n as u32, &r.keyed, r.out))
    }

    /// Job `n`.
    pub(super) fn keyed(&self, n: u32) -> &Keyed {
        &self.recs[n as usize].keyed
    }

    /// Where job `n`'s answer is.
    pub(super) fn out(&self, n: u32) -> JobOut {
        self.recs[n as usize].out
    }

    /// Puts job `n`'s answer at `out`.
    pub(super) fn set_out(&mut self, n: u32, out: JobOut) {
        self.recs[n as usize].out = out;
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.recs.capacity() * size_of::<Rec>()
            + (self.object_heads.capacity() + self.part_heads.capacity()) * 4
    }

    /// Tests: every list holds exactly the jobs naming its owner, each once, and the free
    /// slots are the rest.
    #[cfg(any(test, fuzzing))]
    pub(super) fn validate(&self) {
        let mut seen = vec![0u8; self.recs.len()];
        let lists = (0..self.object_heads.len() as u32)
            .map(Side::Object)
            .chain((0..self.part_heads.len() as u32).map(Side::Part));
        for owner in lists {
            let mut prev = NONE;
            self.each_of(owner, |n| {
                let r = &self.recs[n as usize];
                let side = r.side_of(owner);
                assert_eq!(r.owner(side), owner, "job {n} in a list not its own");
                assert_eq!(r.prev[side], prev, "job {n}'s back link");
                seen[n as usize] += 1;
                prev = n;
            });
        }
        let mut free = 0;
        for (n, r) in self.recs.iter().enumerate() {
            if r.prev[0] == FREE {
                free += 1;
                assert_eq!(seen[n], 0, "free slot {n} in a list");
            } else {
                assert_eq!(seen[n], 2, "job {n} not in both its lists");
            }
        }
        assert_eq!(free + self.live, self.recs.len(), "free slots miscounted");
    }
}
