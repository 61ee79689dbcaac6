package main

import (
	"flag"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/engine/leader"
	"metascript.dev/metascript/engine/metrics"
	"metascript.dev/metascript/engine/shard"
)

// leaderFlags are `metascript run`'s leader election and sharding flags: with --sharding,
// every replica holds a Lease of its own, named after --leader-elect-name, in the same
// namespace and with the same timings, and no replica leads.
type leaderFlags struct {
	enabled, sharding                         bool
	namespace, name                           string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func (f *leaderFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.enabled, "leader-elect", true,
		"reconcile only while holding the engine's Lease, so that one of several replicas works and another takes over; false for one process on a laptop")
	fs.BoolVar(&f.sharding, "sharding", false,
		"share the parents of every controller among the replicas: each holds a Lease of its own (<leader-elect-name>-<identity>) and reconciles the parents a consistent hash gives it; implies no leader election")
	fs.StringVar(&f.namespace, "leader-elect-namespace", "",
		"namespace of the Lease; default: the engine's own (in a cluster), else default")
	fs.StringVar(&f.name, "leader-elect-name", "metascript-engine", "name of the Lease")
	fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second,
		"how long a standby waits after the leader's last renewal before it takes over")
	fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second,
		"how long the leader tries to renew before it stops reconciling and exits")
	fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often the Lease is renewed or tried")
}

func (f *leaderFlags) leaseNamespace() string {
	ns := f.namespace
	if ns == "" {
		ns = leader.InClusterNamespace()
	}
	if ns == "" {
		ns = "default"
	}
	return ns
}

// elector returns the Elector the flags ask for, or nil without leader election. m records
// the election (metascript_leader_election_*).
func (f *leaderFlags) elector(cfg *rest.Config, log *slog.Logger, m *metrics.Metrics) (*leader.Elector, error) {
	if !f.enabled || f.sharding {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ns := f.leaseNamespace()
	return leader.New(leader.Config{Client: client, Namespace: ns, Name: f.name, LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod, Log: log, Observe: m.LeaderObserver(ns + "/" + f.name)})
}

// member returns the engine's place in the ring the flags ask for, or nil without sharding.
func (f *leaderFlags) member(cfg *rest.Config, log *slog.Logger, reg prometheus.Registerer) (*shard.Member, error) {
	if !f.sharding {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return shard.New(shard.Config{Client: client, Namespace: f.leaseNamespace(), Ring: f.name, LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod, Log: log, Metrics: shard.NewMetrics(reg)})
}
