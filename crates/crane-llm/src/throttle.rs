//! Limits for batch use: requests in flight at once, and requests started per minute (spaced
//! evenly, so a burst never exceeds the rate).

use std::time::Duration;

use tokio::sync::{Mutex, Semaphore, SemaphorePermit};
use tokio::time::Instant;

pub(crate) struct Throttle {
    slots: Semaphore,
    spacing: Option<Duration>,
    next_start: Mutex<Option<Instant>>,
}

impl Throttle {
    pub fn new(concurrency: usize, requests_per_minute: Option<u32>) -> Throttle {
        Throttle {
            slots: Semaphore::new(concurrency.max(1)),
            spacing: requests_per_minute
                .filter(|rpm| *rpm > 0)
                .map(|rpm| Duration::from_secs(60) / rpm),
            next_start: Mutex::new(None),
        }
    }

    /// Waits for a free slot and for the rate limit; the request runs while the permit lives.
    /// (The semaphore is never closed, so the permit is always there.)
    pub async fn acquire(&self) -> Option<SemaphorePermit<'_>> {
        let permit = self.slots.acquire().await.ok();
        if let Some(spacing) = self.spacing {
            let start = {
                let mut next_start = self.next_start.lock().await;
                let now = Instant::now();
                let start = next_start.map_or(now, |at| at.max(now));
                *next_start = Some(start + spacing);
                start
            };
            tokio::time::sleep_until(start).await;
        }
        permit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_spaces_the_starts() {
        let throttle = Arc::new(Throttle::new(10, Some(120)));
        let begin = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..4 {
            let _permit = throttle.acquire().await;
            starts.push(Instant::now() - begin);
        }
        assert_eq!(
            starts,
            vec![
                Duration::ZERO,
                Duration::from_millis(500),
                Duration::from_millis(1000),
                Duration::from_millis(1500)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_bounds_requests_in_flight() {
        let throttle = Arc::new(Throttle::new(2, None));
        let in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let (throttle, in_flight, peak) = (throttle.clone(), in_flight.clone(), peak.clone());
            tasks.spawn(async move {
                let _permit = throttle.acquire().await;
                let now = in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                peak.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        while tasks.join_next().await.is_some() {}
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
