package reconcile

import (
	"time"

	"k8s.io/utils/clock"
)

// unfinishedWorkRefresh is how often a controller's work queue refreshes its gauges of work
// in progress (metascript_workqueue_unfinished_work_seconds and
// metascript_workqueue_longest_running_processor_seconds).
const unfinishedWorkRefresh = time.Minute

// queueHeartbeat is how often a controller's work queue looks at its delayed requests
// without being woken by one: client-go's insurance "against weird things happening", every
// 10 s, whereas each delayed request has a timer of its own.
const queueHeartbeat = 2 * time.Minute

// queueClock is the real clock for a controller's work queue, except for its two tickers,
// which tick while nothing happens and, per queue, wake an engine of a thousand idle
// controllers some two hundred times a second: the refresh of the queue's gauges of work in
// progress (every 500 ms in client-go) ticks every unfinishedWorkRefresh instead, and the
// delaying queue's heartbeat (every 10 s) every queueHeartbeat. The queue's delays and
// backoff are the real clock's.
type queueClock struct{ clock.RealClock }

func (c queueClock) NewTicker(d time.Duration) clock.Ticker {
	switch {
	case d < time.Second:
		d = unfinishedWorkRefresh
	case d >= 10*time.Second:
		d = max(d, queueHeartbeat)
	}
	return c.RealClock.NewTicker(d)
}
