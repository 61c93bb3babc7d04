//! The analysis of a file's connections on several threads: the engine's
//! sharded analysis (`kafkashark::shard`) with one thread per shard.
//!
//! The caller routes each batch of pipeline events (`Router`: the batch's
//! events split by connection) and sends every shard its part, possibly
//! empty, so every shard answers every batch; each shard thread decodes and
//! pairs its part (`Shard`) and sends its outputs back; the caller takes
//! each batch's answers from every shard, in turn, and merges them in the
//! events' order (`Merge`). A few batches are in flight at once, so the
//! shards work while the caller routes and merges; the outputs are those of
//! one `MessageAnalyzer`, in the same order (`kafkashark::shard`'s tests,
//! and `ui/tests/stats_threads.rs` for the command).

use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use kafkashark::analyzer::{MessageAnalyzer, Output};
use kafkashark::pipeline::Event;
use kafkashark::shard::{shard_of, Merge, Routed, Router, Shard, ShardOutput};

/// Batches routed and not merged yet, at most: enough that a shard finding
/// its part of one batch small goes on with the next.
const IN_FLIGHT: usize = 2;

/// Most shard threads.
pub const MAX_SHARDS: usize = 16;

/// Shard threads for this machine: one per core, at most [`MAX_SHARDS`].
pub fn default_shards() -> usize {
    crate::cores().min(MAX_SHARDS)
}

/// What a shard thread sends back.
enum Done {
    /// The outputs of its part of one batch.
    Batch(Vec<ShardOutput>),
    /// Its end-of-input reports.
    End(Vec<Output>),
}

/// The sending half of an analysis on shard threads: events in.
pub struct Dispatch {
    router: Router,
    /// Each shard's parts; dropped, the end of input.
    to: Vec<SyncSender<Vec<Routed>>>,
}

/// The receiving half: the shards' outputs merged, in order.
pub struct Collect {
    merge: Merge,
    from: Vec<Receiver<Done>>,
    /// To hand outputs back to their shard ([`Collect::recycle`]): not
    /// bounded, so that the hand-back never waits nor falls back to freeing
    /// here, but a shard empties it at each part it is sent, so it holds at
    /// most the outputs of the batches in flight.
    back: Vec<Sender<Vec<Output>>>,
    handles: Vec<JoinHandle<()>>,
    /// Each shard's outputs of the batch being merged.
    parts: Vec<Vec<ShardOutput>>,
    ended: bool,
}

/// Starts `shards` threads (at least one), each analysing its shard of
/// `analyzer`'s analysis: events go in by the [`Dispatch`] (on one thread)
/// and come out merged from the [`Collect`] (on another, or the same).
/// With `strip`, the messages' bytes are dropped on the shard's thread once
/// analysed (for a reader of facts only).
pub fn spawn(
    analyzer: &MessageAnalyzer,
    shards: usize,
    strip: bool,
) -> std::io::Result<(Dispatch, Collect)> {
    let router = Router::new(shards);
    let n = router.shards();
    let (mut to, mut from, mut back, mut handles) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        // Bounded both ways: at most a few batches in flight per shard.
        let (tx, rx) = sync_channel::<Vec<Routed>>(IN_FLIGHT);
        let (done_tx, done_rx) = sync_channel::<Done>(IN_FLIGHT);
        let (back_tx, back_rx) = channel::<Vec<Output>>();
        let mut shard = Shard::new(analyzer);
        let h = std::thread::Builder::new()
            .name(format!("kafkashark-shard-{i}"))
            .spawn(move || {
                for part in rx.iter() {
                    // Outputs read and done with, dropped where they were
                    // allocated: freed on another thread, each record would
                    // go back to this thread's allocator the slow way.
                    back_rx.try_iter().for_each(drop);
                    let mut out = Vec::with_capacity(part.len());
                    for r in part {
                        shard.push(r, &mut out);
                    }
                    if strip {
                        strip_bytes(&mut out);
                    }
                    if done_tx.send(Done::Batch(out)).is_err() {
                        return;
                    }
                }
                let mut end = Vec::new();
                shard.finish(&mut end);
                let _ = done_tx.send(Done::End(end));
            })?;
        handles.push(h);
        to.push(tx);
        from.push(done_rx);
        back.push(back_tx);
    }
    let collect = Collect {
        merge: Merge::new(analyzer),
        from,
        back,
        handles,
        parts: (0..n).map(|_| Vec::new()).collect(),
        ended: false,
    };
    Ok((Dispatch { router, to }, collect))
}

impl Dispatch {
    /// Routes one batch of events to the shards (every shard gets its part,
    /// possibly empty); `false` when a shard has stopped (the [`Collect`]
    /// says why). `evs` is drained.
    pub fn push(&mut self, evs: &mut Vec<Event>) -> bool {
        // Each part sized for its events at once: grown by doubling, a
        // batch's events were copied again and again.
        let mut sizes = vec![0usize; self.to.len()];
        for ev in evs.iter() {
            if let Some(k) = sizes.get_mut(self.router.shard(ev)) {
                *k += 1;
            }
        }
        let mut split: Vec<Vec<Routed>> = sizes.into_iter().map(Vec::with_capacity).collect();
        for ev in evs.drain(..) {
            let (i, r) = self.router.route(ev);
            if let Some(p) = split.get_mut(i) {
                p.push(r);
            }
        }
        let sent = self.to.iter().zip(split);
        sent.fold(true, |ok, (tx, part)| ok && tx.send(part).is_ok())
    }
}

impl Collect {
    /// Appends the merged outputs of the next batch to `out`, or after the
    /// last one (the [`Dispatch`] dropped) the shards' end-of-input reports;
    /// `false` once those are given.
    pub fn next(&mut self, out: &mut Vec<Output>) -> bool {
        if self.ended {
            return false;
        }
        let mut ends = Vec::new();
        for (rx, part) in self.from.iter().zip(self.parts.iter_mut()) {
            match rx.recv() {
                Ok(Done::Batch(p)) => *part = p,
                Ok(Done::End(e)) => ends.push(e),
                Err(_) => self.fail(),
            }
        }
        if ends.is_empty() {
            self.merge.merge(&mut self.parts, out);
            return true;
        }
        // Every shard gets every batch: all end together.
        if ends.len() != self.from.len() {
            self.fail();
        }
        self.merge.finish(&mut ends, out);
        self.ended = true;
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        true
    }

    /// Outputs read and done with, each message dropped by the shard thread
    /// that made it (notices here).
    pub fn recycle(&mut self, done: Vec<Output>) {
        let n = self.back.len();
        let shard = |o: &Output| match o {
            Output::Message(m) => Some(shard_of(m.info.stream, n)),
            Output::Notice(_) => None,
        };
        // Each shard's share counted first: its vector is made to size.
        let mut sizes = vec![0usize; n];
        for i in done.iter().filter_map(shard) {
            if let Some(k) = sizes.get_mut(i) {
                *k += 1;
            }
        }
        let mut back: Vec<Vec<Output>> = sizes.into_iter().map(Vec::with_capacity).collect();
        for o in done {
            if let Some(b) = shard(&o).and_then(|i| back.get_mut(i)) {
                b.push(o);
            }
        }
        for (tx, b) in self.back.iter().zip(back) {
            if !b.is_empty() {
                // A shard that has ended frees nothing more: dropped here.
                let _ = tx.send(b);
            }
        }
    }

    /// A shard thread stopped before its end, which only a panic does:
    /// the panic is raised again here.
    fn fail(&mut self) -> ! {
        // The others stop too: their next answer finds no one to take it.
        self.back.clear();
        self.from.clear();
        for h in self.handles.drain(..) {
            if let Err(p) = h.join() {
                std::panic::resume_unwind(p);
            }
        }
        unreachable!("a shard thread ended early without a panic")
    }
}

/// [`crate::print::strip_bytes`] of shard outputs.
fn strip_bytes(out: &mut [ShardOutput]) {
    for o in out {
        crate::print::strip_bytes(std::slice::from_mut(o.output_mut()), false);
    }
}
