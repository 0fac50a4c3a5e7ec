//! Parallel loops that keep every thread busy to the end.
//!
//! Each item is handed out on its own: one worker per thread takes the next item
//! from a shared counter until none is left. Rayon's splitting of a range hands
//! each thread a run of items that no other thread can take over once started, and
//! a loop then ended with one thread finishing its run alone (docs/performance.md,
//! "Loops that end together").
//!
//! Items of very different sizes can also start largest first
//! ([`map_largest_first`], parsing's files). A loop over items in their own order
//! ends with whatever item came last: when that is
//! a large one (the 846 KB libdevice module that closes every replica of the cross
//! sets, 2 ms to parse), one thread works on it alone while the others wait.
//! Started largest first, the items left at the end are the smallest, and the
//! threads finish within one small item of each other (greedy
//! longest-processing-time scheduling).
//!
//! Thousands of small allocations (a vector per module) are freed on every thread
//! rather than one after the other on the thread that drops their owner.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

/// `f(i)` for every `i` in `0..sizes.len()`, in parallel, started in decreasing
/// order of `sizes[i]` (ties in index order); the results are in index order, so
/// the output does not depend on the order they were made in.
///
/// Each result is written straight into its place in the vector returned: a slot
/// per item made first and emptied into the vector after (a mutex each) cost a
/// serial 0.45 ms before the loop and as much after it on the 2,310-module cross
/// set (docs/performance.md).
pub(crate) fn map_largest_first<T, F>(sizes: &[u64], f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let mut order: Vec<u32> = (0..sizes.len() as u32).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i as usize]));
    // SAFETY: `order` holds each of `0..sizes.len()` once.
    unsafe { map_started_in(sizes.len(), |k| order[k] as usize, f) }
}

/// `f(i)` for every `i` in `0..n`, in parallel, each item handed out on its own,
/// in index order, to whichever thread is free; the results are in index order.
/// For items of similar sizes whose order of work matters to the memory they
/// touch (the layout's parts: [`map_largest_first`] took it longer).
pub(crate) fn map_each<T, F>(n: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    // SAFETY: the identity holds each of `0..n` once.
    unsafe { map_started_in(n, |k| k, f) }
}

/// `f(&mut state, i)` for every `i` in `0..n`, each item handed out on its own, in
/// index order, to whichever thread is free (as [`map_each`]); each worker makes
/// its own `state` with `init`. The first error is returned, and no thread starts
/// another item once it has seen an item fail.
pub(crate) fn try_for_each<S, E, I, F>(n: usize, init: I, f: F) -> Result<(), E>
where
    E: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, usize) -> Result<(), E> + Sync,
{
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    // One worker per thread, each taking the next item until none is left, so the
    // items start in index order on whichever thread is free. (One call per item
    // over a range would not do: rayon hands each thread a run of calls that no
    // other thread can take over, and the thread left with calls at the end would
    // do the last items alone.) Nested parallel work inside `f` is stolen as
    // usual, by the workers that found no item left.
    let workers = rayon::current_num_threads().min(n);
    (0..workers)
        .into_par_iter()
        .with_max_len(1)
        .try_for_each(|_| {
            let mut state = init();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n || failed.load(Ordering::Relaxed) {
                    return Ok(());
                }
                if let Err(e) = f(&mut state, k) {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        })
}

/// Chunk `i` of `items` cut into chunks of `size` (the last may be shorter): the
/// items of a task of a loop over chunks ([`map_each`]).
pub(crate) fn nth_chunk<T>(items: &[T], size: usize, i: usize) -> &[T] {
    &items[i * size..items.len().min((i + 1) * size)]
}

/// `f(i)` for every `i` in `0..n`, the `k`-th item started being `order(k)`.
///
/// # Safety
/// `order` maps `0..n` onto `0..n`, each index once: each result is written once
/// to its place, and every place is written before the vector is read.
unsafe fn map_started_in<T, F, O>(n: usize, order: O, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
    O: Fn(usize) -> usize + Sync,
{
    let mut results: Vec<T> = Vec::with_capacity(n);
    let places = Places(results.spare_capacity_mut().as_mut_ptr());
    // The items are handed out as `try_for_each` hands them out, the `k`-th being
    // item `order(k)`; none fails.
    let all: Result<(), std::convert::Infallible> = try_for_each(
        n,
        || (),
        |(), k| {
            let i = order(k);
            let value = f(i);
            // SAFETY: `order` takes each of `0..n` once (the caller's promise) and
            // each `k` is handed out once, so place `i`, within the vector's
            // capacity, is written once, by this thread alone, and read by none
            // until the loop has ended.
            unsafe { places.write(i, value) };
            Ok(())
        },
    );
    let Ok(()) = all;
    // SAFETY: the loop ended with every `k` taken and its item written, so the
    // first `n` places hold values. (Should `f` panic, the panic leaves before this
    // line: the values written are leaked, never read.)
    unsafe { results.set_len(n) };
    results
}

/// The items of each part's slice (`slice(part)`), one part after the other, in a
/// new vector copied in parallel: each thread writes each place of the parts it
/// copies once, and so first touches the pages it copies to. (Appended one part
/// after the other, the 105 MB benchmark link's output symbols took 0.6 ms in
/// order, most of it the new vector's page faults.)
pub(crate) fn concatenated<P, T>(parts: &[P], slice: fn(&P) -> &[T]) -> Vec<T>
where
    P: Sync,
    T: Clone + Send + Sync,
{
    let mut starts = Vec::with_capacity(parts.len());
    let mut total = 0;
    for p in parts {
        starts.push(total);
        total += slice(p).len();
    }
    let mut items: Vec<T> = Vec::with_capacity(total);
    let places = Places(items.spare_capacity_mut().as_mut_ptr());
    parts.par_iter().zip(&starts).for_each(|(p, &start)| {
        for (k, item) in slice(p).iter().enumerate() {
            // SAFETY: the parts' ranges `start..start + len` follow each other
            // within `total`, the vector's capacity, so each place is written
            // once, by the thread copying its part, and read by none meanwhile.
            unsafe { places.write(start + k, item.clone()) };
        }
    });
    // SAFETY: the ranges cover `0..total`, every place of which was written (a
    // panicking `clone` leaves before this line: what was written is leaked).
    unsafe { items.set_len(total) };
    items
}

/// The places of a vector's spare capacity, for threads to write their results to
/// ([`map_largest_first`], [`concatenated`]).
struct Places<T>(*mut std::mem::MaybeUninit<T>);

// SAFETY: threads only write values of `T: Send` through it, each to places no
// other thread touches (see its use).
unsafe impl<T: Send> Sync for Places<T> {}

impl<T> Places<T> {
    /// Writes `value` to place `i`.
    ///
    /// # Safety
    /// `i` is within the capacity the pointer came with, and no other thread
    /// reads or writes place `i` meanwhile.
    unsafe fn write(&self, i: usize, value: T) {
        // SAFETY: as the caller promises.
        unsafe { (*self.0.add(i)).write(value) };
    }
}

/// `items` cut into consecutive slices of the given lengths (which must add up to
/// at most its length), to be filled in parallel.
pub(crate) fn split_by_lengths<T>(
    mut items: &mut [T],
    lengths: impl Iterator<Item = usize>,
) -> Vec<&mut [T]> {
    let mut slices = Vec::with_capacity(lengths.size_hint().0);
    for len in lengths {
        let (slice, rest) = std::mem::take(&mut items).split_at_mut(len);
        slices.push(slice);
        items = rest;
    }
    slices
}

/// Frees `items` (and whatever each owns) on every thread of the pool.
pub(crate) fn free<T: Send>(items: Vec<T>) {
    items.into_par_iter().for_each(drop);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Results are in index order, each item mapped once, at any thread count.
    #[test]
    fn results_come_back_in_index_order() {
        let sizes: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 613).collect();
        for threads in [1, 2, 5] {
            let calls = AtomicUsize::new(0);
            let got: Vec<u64> = pool(threads).install(|| {
                map_largest_first(&sizes, |i| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    sizes[i] * 2 + i as u64
                })
            });
            let want: Vec<u64> = (0..1000).map(|i| sizes[i] * 2 + i as u64).collect();
            assert_eq!(got, want, "{threads} threads");
            assert_eq!(calls.into_inner(), 1000);
        }
    }

    /// On one thread the items start exactly largest first, ties in index order.
    #[test]
    fn items_start_largest_first() {
        let sizes = [3u64, 9, 1, 9, 4];
        let started = Mutex::new(Vec::new());
        let _: Vec<()> =
            pool(1).install(|| map_largest_first(&sizes, |i| started.lock().unwrap().push(i)));
        assert_eq!(started.into_inner().unwrap(), [1, 3, 4, 0, 2]);
    }

    /// Nested parallel work inside an item still runs and returns its results.
    #[test]
    fn items_may_work_in_parallel_themselves() {
        let sizes = [5u64, 50, 500];
        let got: Vec<u64> =
            pool(3).install(|| map_largest_first(&sizes, |i| (0..sizes[i]).into_par_iter().sum()));
        assert_eq!(got, [10, 1225, 124750]);
    }

    #[test]
    fn slices_follow_each_other() {
        let mut v: Vec<u32> = (0..10).collect();
        let parts = split_by_lengths(&mut v, [3, 0, 5].into_iter());
        let got: Vec<Vec<u32>> = parts.iter().map(|p| p.to_vec()).collect();
        assert_eq!(got, [vec![0, 1, 2], vec![], vec![3, 4, 5, 6, 7]]);
    }

    /// An item that panics fails the whole map, at any thread count: the results
    /// already written are leaked, and no unwritten place is read or dropped.
    #[test]
    fn a_panicking_item_fails_the_map() {
        let sizes: Vec<u64> = (0..64).collect();
        for threads in [1, 2, 5] {
            let made = std::panic::catch_unwind(|| {
                pool(threads).install(|| {
                    map_largest_first(&sizes, |i| {
                        assert!(i != 17, "item 17");
                        vec![i; 3]
                    })
                })
            });
            assert!(made.is_err(), "{threads} threads");
        }
    }

    /// Parts are concatenated in order, at any thread count.
    #[test]
    fn parts_are_concatenated_in_order() {
        let parts: Vec<Vec<String>> = (0..300)
            .map(|p| (0..(p * 7) % 13).map(|i| format!("{p}.{i}")).collect())
            .collect();
        let want: Vec<String> = parts.concat();
        for threads in [1, 2, 5] {
            let got = pool(threads).install(|| concatenated(&parts, |p| p.as_slice()));
            assert_eq!(got, want, "{threads} threads");
        }
        assert!(concatenated::<Vec<u8>, u8>(&[], |p| p.as_slice()).is_empty());
    }

    /// `map_each`: results in index order, each item mapped once, at any thread
    /// count; on one thread the items start in index order.
    #[test]
    fn each_item_is_mapped_once_in_order() {
        for threads in [1, 2, 5] {
            let calls = AtomicUsize::new(0);
            let started = Mutex::new(Vec::new());
            let got: Vec<String> = pool(threads).install(|| {
                map_each(1000, |i| {
                    calls.fetch_add(1, Ordering::Relaxed);
                    started.lock().unwrap().push(i);
                    format!("{}", i * 3)
                })
            });
            let want: Vec<String> = (0..1000).map(|i| format!("{}", i * 3)).collect();
            assert_eq!(got, want, "{threads} threads");
            assert_eq!(calls.into_inner(), 1000);
            if threads == 1 {
                let order: Vec<usize> = (0..1000).collect();
                assert_eq!(started.into_inner().unwrap(), order);
            }
        }
        let panicked = std::panic::catch_unwind(|| {
            pool(2).install(|| {
                map_each(64, |i| {
                    assert!(i != 40, "item 40");
                    vec![i; 2]
                })
            })
        });
        assert!(panicked.is_err());
    }

    /// `try_for_each`: every item once when none fails, at any thread count; an
    /// error is returned and stops the items not yet started.
    #[test]
    fn try_for_each_visits_each_item_once_or_stops_at_an_error() {
        for threads in [1, 2, 5] {
            let seen: Vec<AtomicUsize> = (0..500).map(|_| AtomicUsize::new(0)).collect();
            let inits = AtomicUsize::new(0);
            let r: Result<(), ()> = pool(threads).install(|| {
                try_for_each(
                    seen.len(),
                    || inits.fetch_add(1, Ordering::Relaxed),
                    |_, i| {
                        seen[i].fetch_add(1, Ordering::Relaxed);
                        Ok(())
                    },
                )
            });
            assert_eq!(r, Ok(()));
            assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
            assert!(inits.into_inner() <= threads);
            let started = AtomicUsize::new(0);
            let r = pool(threads).install(|| {
                try_for_each(
                    10_000,
                    || (),
                    |_, i| {
                        started.fetch_add(1, Ordering::Relaxed);
                        if i == 3 {
                            Err(i)
                        } else {
                            Ok(())
                        }
                    },
                )
            });
            assert_eq!(r, Err(3), "{threads} threads");
            // On one thread nothing after the failed item starts (on more, the
            // others may have taken any number of items before it failed).
            if threads == 1 {
                assert_eq!(started.into_inner(), 4);
            }
        }
    }

    #[test]
    fn no_items() {
        let got: Vec<u8> = map_largest_first(&[], |_| 0);
        assert!(got.is_empty());
        let got: Vec<u8> = map_each(0, |_| 0);
        assert!(got.is_empty());
    }
}
