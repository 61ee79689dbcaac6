package leader

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestNewRefusesTimingsThatCannotHold: the argument that two leaders never write at once
// needs retry period < renew deadline, and the two together < lease duration.
func TestNewRefusesTimingsThatCannotHold(t *testing.T) {
	cases := []struct {
		lease, renew, retry time.Duration
		ok                  bool
	}{
		{0, 0, 0, true}, // client-go's defaults: 15 s, 10 s, 2 s
		{4 * time.Second, 3 * time.Second, time.Second, false}, // no margin left
		{10 * time.Second, 10 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 20 * time.Second, 2 * time.Second, false},
		{15 * time.Second, 10 * time.Second, 10 * time.Second, false},
		{12 * time.Second, 10 * time.Second, 2 * time.Second, false}, // no margin left
		{4 * time.Second, 3 * time.Second, 500 * time.Millisecond, true},
	}
	for _, c := range cases {
		_, err := New(Config{Client: fake.NewClientset(), Namespace: "ns", Name: "lease",
			LeaseDuration: c.lease, RenewDeadline: c.renew, RetryPeriod: c.retry})
		if (err == nil) != c.ok {
			t.Errorf("lease %v, renew %v, retry %v: error %v, want ok %v", c.lease, c.renew, c.retry, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "retry period") {
			t.Errorf("error %q does not say which timings", err)
		}
	}
}
