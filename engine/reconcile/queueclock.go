package reconcile

import (
	"time"

	"k8s.io/utils/clock"
)

// unfinishedWorkRefresh is how often a controller's work queue refreshes its gauges of work
// in progress (metascript_workqueue_unfinished_work_seconds and
// metascript_workqueue_longest_running_processor_seconds).
const unfinishedWorkRefresh = 30 * time.Second

// queueClock is the real clock for a controller's work queue, except for the ticker with which
// client-go refreshes the queue's gauges of work in progress: every 500 ms, per queue, which
// with a thousand controllers wakes the engine two thousand times a second while nothing
// happens. Its tickers shorter than a second tick every unfinishedWorkRefresh instead; the
// queue's other timing (delays, backoff, its 10 s heartbeat) is the real clock's.
type queueClock struct{ clock.RealClock }

func (c queueClock) NewTicker(d time.Duration) clock.Ticker {
	if d < time.Second {
		d = unfinishedWorkRefresh
	}
	return c.RealClock.NewTicker(d)
}
