//! The analysis of a file's connections on several threads: the engine's
//! sharded analysis (`kafkashark::shard`) with one thread per shard, or,
//! with one shard, on the routing thread.
//!
//! The caller routes each batch of pipeline events (`Router`: the batch's
//! events split by connection) and sends every shard its part, possibly
//! empty, so every shard answers every batch; each shard thread decodes and
//! pairs its part (`Shard`) and sends its outputs on; the collecting thread
//! takes each batch's answers from every shard, in turn, and merges them in
//! the events' order (`Merge`). A few batches are in flight at once, so the
//! shards work while the caller routes and the collector merges. One shard
//! is run by the caller itself, each event analysed as it is routed, its
//! outputs sent on the same way. The outputs are those of one
//! `MessageAnalyzer`, in the same order (`kafkashark::shard`'s tests, and
//! `ui/tests/stats_threads.rs` and `ui/tests/print_threads.rs` for the
//! commands).

use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;

use kafkashark::analyzer::{MessageAnalyzer, Output};
use kafkashark::pipeline::Event;
use kafkashark::shard::{shard_of, Merge, Routed, Router, Shard, ShardOutput};

use crate::print::Keep;

/// Batches routed and not merged yet, at most: enough that a shard finding
/// its part of one batch small goes on with the next.
const IN_FLIGHT: usize = 2;

/// Most shard threads.
pub const MAX_SHARDS: usize = 16;

/// Shards for this machine: one per core but the reader's, at most
/// [`MAX_SHARDS`]. On two cores that is one, run on the routing thread:
/// the reader, that thread and the collecting one keep both cores busy,
/// where shard threads added a hop per event and per output
/// (docs/performance.md, "Threads in `stats`").
pub fn default_shards() -> usize {
    crate::cores().saturating_sub(1).clamp(1, MAX_SHARDS)
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
    /// Each shard thread's parts; dropped, the end of input.
    to: Vec<SyncSender<Vec<Routed>>>,
    /// The one shard, run here.
    here: Option<Worker>,
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

/// One shard's analysis where it runs (its thread, or the [`Dispatch`]'s
/// when there is one shard): parts of batches in, outputs out to the
/// [`Collect`].
struct Worker {
    shard: Shard,
    keep: Keep,
    done: SyncSender<Done>,
    /// Outputs handed back by [`Collect::recycle`].
    back: Receiver<Vec<Output>>,
}

impl Worker {
    /// Analyses one part of `len` events, pushed to the shard by `push`,
    /// and sends its outputs on; false once the [`Collect`] is gone.
    fn part(&mut self, len: usize, push: impl FnOnce(&mut Shard, &mut Vec<ShardOutput>)) -> bool {
        // Outputs read and done with, dropped where they were allocated:
        // freed on another thread, each record would go back to this
        // thread's allocator the slow way.
        self.back.try_iter().for_each(drop);
        let mut out = Vec::with_capacity(len);
        push(&mut self.shard, &mut out);
        if !self.keep.bytes {
            strip_bytes(&mut out, self.keep.frames);
        }
        self.done.send(Done::Batch(out)).is_ok()
    }

    /// The end of input: the shard's end-of-input reports sent on.
    fn end(mut self) {
        let mut end = Vec::new();
        self.shard.finish(&mut end);
        let _ = self.done.send(Done::End(end));
    }
}

/// Starts the analysis of `analyzer` in `shards` shards (at least one):
/// events go in by the [`Dispatch`] (on one thread) and come out merged
/// from the [`Collect`] (on another). Each shard runs on a thread of its
/// own; one shard runs on the [`Dispatch`]'s thread, in its `push`: the
/// same analysis, one hop of every event fewer (on two cores the reader,
/// this thread and the collecting one keep both busy). What `keep` does
/// not keep of the messages (their bytes, their frames) is dropped where
/// they were analysed (for a reader of facts only).
pub fn spawn(
    analyzer: &MessageAnalyzer,
    shards: usize,
    keep: Keep,
) -> std::io::Result<(Dispatch, Collect)> {
    let router = Router::new(shards);
    let n = router.shards();
    let (mut to, mut from, mut back, mut handles) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut here = None;
    for i in 0..n {
        // Bounded both ways: at most a few batches in flight per shard.
        let (done_tx, done_rx) = sync_channel::<Done>(IN_FLIGHT);
        let (back_tx, back_rx) = channel::<Vec<Output>>();
        let mut worker = Worker {
            shard: Shard::new(analyzer),
            keep,
            done: done_tx,
            back: back_rx,
        };
        from.push(done_rx);
        back.push(back_tx);
        if n == 1 {
            here = Some(worker);
            break;
        }
        let (tx, rx) = sync_channel::<Vec<Routed>>(IN_FLIGHT);
        let h = std::thread::Builder::new()
            .name(format!("kafkashark-shard-{i}"))
            .spawn(move || {
                for part in rx.iter() {
                    let len = part.len();
                    let push = |shard: &mut Shard, out: &mut Vec<ShardOutput>| {
                        part.into_iter().for_each(|r| shard.push(r, out));
                    };
                    if !worker.part(len, push) {
                        return;
                    }
                }
                worker.end();
            })?;
        handles.push(h);
        to.push(tx);
    }
    let collect = Collect {
        merge: Merge::new(analyzer),
        from,
        back,
        handles,
        parts: (0..n).map(|_| Vec::new()).collect(),
        ended: false,
    };
    Ok((Dispatch { router, to, here }, collect))
}

impl Dispatch {
    /// The place in the order of the next event pushed: the events pushed
    /// so far ([`Collect::next`]'s `seqs`).
    pub fn seq(&self) -> u64 {
        self.router.seq()
    }

    /// Routes one batch of events to the shards (every shard gets its part,
    /// possibly empty); `false` when a shard has stopped (the [`Collect`]
    /// says why). `evs` is drained.
    pub fn push(&mut self, evs: &mut Vec<Event>) -> bool {
        if let Some(w) = &mut self.here {
            let (router, len) = (&mut self.router, evs.len());
            let push = |shard: &mut Shard, out: &mut Vec<ShardOutput>| {
                for ev in evs.drain(..) {
                    let (_, seq, index) = router.place(&ev);
                    shard.push_at(seq, index, ev, out);
                }
            };
            return w.part(len, push);
        }
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

impl Drop for Dispatch {
    /// Input ends: the shard run here reports its end (the threads' see
    /// their channels closed).
    fn drop(&mut self) {
        if let Some(w) = self.here.take() {
            w.end();
        }
    }
}

impl Collect {
    /// Appends the merged outputs of the next batch to `out` (with `seqs`,
    /// the place of the event that made each one there: [`Dispatch::seq`]),
    /// or after the last one (the [`Dispatch`] dropped) the shards'
    /// end-of-input reports ([`Collect::ended`] then); `false` once those
    /// are given.
    pub fn next(&mut self, out: &mut Vec<Output>, seqs: Option<&mut Vec<u64>>) -> bool {
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
            self.merge.merge(&mut self.parts, out, seqs);
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

    /// Topic names learned so far (in the outputs merged).
    pub fn topic_names(&self) -> &kafkashark::topics::TopicNames {
        self.merge.topic_names()
    }

    /// Whether the last [`Collect::next`] gave the end-of-input reports.
    pub fn ended(&self) -> bool {
        self.ended
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
fn strip_bytes(out: &mut [ShardOutput], keep_frames: bool) {
    for o in out {
        crate::print::strip_bytes(std::slice::from_mut(o.output_mut()), keep_frames);
    }
}

/// Capture files analysed batch by batch for a caller that takes each
/// batch's outputs on the thread that routes it (the TUI's loader,
/// `export`, `stats`): read, reassembled and framed on a reader thread
/// (`print::FileReader`, which scans messages ahead while the shards are
/// behind), decoded in shards, merged back in order.
pub struct FileAnalysis {
    reader: crate::print::FileReader,
    /// Until the last batch is analysed.
    dispatch: Option<Dispatch>,
    collect: Collect,
}

/// What a batch read says beside its outputs ([`FileAnalysis::next`]).
pub struct BatchFacts {
    /// The time of the capture's first frame (first batch only).
    pub first_ts: Option<kafkashark::vocab::Timestamp>,
    /// Its frames' captured bytes, with 16 bytes of record header each.
    pub bytes: u64,
    /// The pipeline's counters once its frames were pushed.
    pub counters: kafkashark::pipeline::PipelineStats,
    /// What stopped the read early (last batch).
    pub error: Option<kafkashark::capture::CaptureError>,
    /// The last batch: its outputs end with the shards' end-of-input reports.
    pub last: bool,
}

impl FileAnalysis {
    /// Starts reading `src` with `analyzer`'s pipeline settings and analysing
    /// it in `shards` shards (see [`spawn`]).
    pub fn spawn(
        src: kafkashark::capture::FileSource,
        analyzer: &MessageAnalyzer,
        shards: usize,
        keep: Keep,
    ) -> std::io::Result<FileAnalysis> {
        let (dispatch, collect) = spawn(analyzer, shards, keep)?;
        let reader = crate::print::FileReader::spawn(
            src,
            analyzer.config().pipeline.clone(),
            crate::print::BATCH_FRAMES,
            analyzer.ahead_scanner(),
        );
        Ok(FileAnalysis {
            reader,
            dispatch: Some(dispatch),
            collect,
        })
    }

    /// Appends the outputs of the next batch to `out` and says what the
    /// batch read; `None` after the last one (or once a shard stopped).
    pub fn next(&mut self, out: &mut Vec<Output>) -> Option<BatchFacts> {
        let d = self.dispatch.as_mut()?;
        // The reader ends with a batch marked last; without it, it stopped
        // (a panic there is raised again here).
        let batch = self.reader.rx.recv().unwrap_or_else(|_| {
            self.reader.join();
            Box::new(crate::print::Batch {
                finish: Some(Vec::new()),
                ..Default::default()
            })
        });
        let mut evs = batch.evs;
        if !(d.push(&mut evs) && self.collect.next(out, None)) {
            self.dispatch = None;
            return None;
        }
        let last = batch.finish.is_some();
        if let Some(mut fin) = batch.finish {
            if !(d.push(&mut fin) && self.collect.next(out, None)) {
                self.dispatch = None;
                return None;
            }
            // Input ends: the shards' reports of requests never answered.
            self.dispatch = None;
            self.collect.next(out, None);
        }
        Some(BatchFacts {
            first_ts: batch.first_ts,
            bytes: batch.bytes,
            counters: batch.counters,
            error: batch.error,
            last,
        })
    }

    /// Topic names learned so far.
    pub fn topic_names(&self) -> &kafkashark::topics::TopicNames {
        self.collect.topic_names()
    }

    /// Outputs read and done with, each message dropped by the shard that
    /// made it ([`Collect::recycle`]).
    pub fn recycle(&mut self, done: Vec<Output>) {
        self.collect.recycle(done);
    }
}
