package shard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a member's gauges and counters. A nil *Metrics records nothing.
type Metrics struct {
	members     prometheus.Gauge
	share       prometheus.Gauge
	paused      prometheus.Gauge
	viewChanges prometheus.Counter
	drains      prometheus.Histogram
	catchUps    prometheus.Histogram
	owned       *prometheus.GaugeVec
}

// NewMetrics returns the member metrics, registered with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		members: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_shard_members",
			Help: "Members of the ring in this member's current view, itself included."}),
		share: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_shard_ring_share_ratio",
			Help: "Fraction of the hash ring, and so of every controller's parents in expectation, this member owns."}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "metascript_shard_paused",
			Help: "1 while the member waits for every member to acknowledge a new view, and reconciles nothing."}),
		viewChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "metascript_shard_view_changes_total",
			Help: "Times the member's view of the ring changed: a member joined or left."}),
		drains: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "metascript_shard_drain_duration_seconds",
			Help:    "From a view change to this member's acknowledgement of it: reconciles in flight finishing, and the Lease write.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
		catchUps: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "metascript_shard_cache_catch_up_duration_seconds",
			Help:    "From this member's acknowledgement of a view to its caches holding what the view gives it: a consistent list of each cached resource.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 12)}),
		owned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "metascript_shard_parents",
			Help: "Parents of each controller this member owns, as of the last status refresh."}, []string{"controller"}),
	}
	reg.MustRegister(m.members, m.share, m.paused, m.viewChanges, m.drains, m.catchUps, m.owned)
	return m
}

func (m *Metrics) viewChanged(members int, share float64) {
	if m == nil {
		return
	}
	m.members.Set(float64(members))
	m.share.Set(share)
	m.viewChanges.Inc()
	m.paused.Set(1)
}

func (m *Metrics) authorized(yes bool) {
	if m == nil {
		return
	}
	if yes {
		m.paused.Set(0)
	} else {
		m.paused.Set(1)
	}
}

func (m *Metrics) drained(d time.Duration) {
	if m == nil {
		return
	}
	m.drains.Observe(d.Seconds())
}

func (m *Metrics) caughtUp(d time.Duration) {
	if m == nil {
		return
	}
	m.catchUps.Observe(d.Seconds())
}

// SetParents sets how many of a controller's parents the member owns; a negative n removes the
// controller's series.
func (m *Metrics) SetParents(controller string, n int) {
	if m == nil {
		return
	}
	if n < 0 {
		m.owned.DeleteLabelValues(controller)
		return
	}
	m.owned.WithLabelValues(controller).Set(float64(n))
}
