package fairshare

import (
	"time"

	"k8s.io/client-go/util/workqueue"
)

// queueRefresh is how often a Queue sets its gauges of work in progress.
const queueRefresh = time.Second

// queueMetrics are a Queue's client-go work queue metrics; the zero value records nothing.
type queueMetrics struct {
	on         bool
	depth      workqueue.GaugeMetric
	adds       workqueue.CounterMetric
	latency    workqueue.HistogramMetric
	work       workqueue.HistogramMetric
	unfinished workqueue.SettableGaugeMetric
	longest    workqueue.SettableGaugeMetric
	retries    workqueue.CounterMetric
}

func newQueueMetrics(p workqueue.MetricsProvider, name string) queueMetrics {
	return queueMetrics{on: true, depth: p.NewDepthMetric(name), adds: p.NewAddsMetric(name),
		latency: p.NewLatencyMetric(name), work: p.NewWorkDurationMetric(name),
		unfinished: p.NewUnfinishedWorkSecondsMetric(name), longest: p.NewLongestRunningProcessorSecondsMetric(name),
		retries: p.NewRetriesMetric(name)}
}

// added counts an item that is to be processed (queued, or queued again once Done).
func (m queueMetrics) added() {
	if m.on {
		m.adds.Inc()
		m.depth.Inc()
	}
}

// taken records an item a worker took after waiting for waited.
func (m queueMetrics) taken(waited time.Duration) {
	if m.on {
		m.depth.Dec()
		m.latency.Observe(waited.Seconds())
	}
}

// done records an item processed for took.
func (m queueMetrics) done(took time.Duration) {
	if m.on {
		m.work.Observe(took.Seconds())
	}
}

func (m queueMetrics) retried() {
	if m.on {
		m.retries.Inc()
	}
}

// refresh sets the gauges of work in progress every queueRefresh until ShutDown.
func (q *Queue[T]) refresh() {
	tick := time.NewTicker(queueRefresh)
	defer tick.Stop()
	for {
		select {
		case <-q.stop:
			return
		case now := <-tick.C:
			q.mu.Lock()
			var sum, longest time.Duration
			for _, p := range q.processing {
				d := now.Sub(p.since)
				sum += d
				longest = max(longest, d)
			}
			q.mu.Unlock()
			q.metrics.unfinished.Set(sum.Seconds())
			q.metrics.longest.Set(longest.Seconds())
		}
	}
}
