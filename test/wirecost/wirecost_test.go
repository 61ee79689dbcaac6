// Package wirecost measures what the API server spends sending watch events in each encoding
// a client may ask for: JSON (what the engine's dynamic clients ask for), protobuf (what
// typed clients of built-in resources ask for) and CBOR (served behind the API server's
// CBORServingAndStorage gate in 1.37). What the engine spends decoding each is measured
// apart, without a cluster: go test -run '^$' -bench 'Decode' ./engine/wire/.
//
// It creates N ConfigMaps shaped like the engine's children, then, round after round, opens
// a watch of them in each encoding that streams them all (sendInitialEvents), reads every
// event to the end of the initial ones, and reads the API server's CPU time before and
// after from /proc. No object changes during a watch, so the CPU is the watch's: reading
// the objects from the watch cache, encoding them, and writing them out over TLS.
//
//	go test -count=1 -run '^TestWatchCost$' -v ./test/wirecost/ -objects=10000 -rounds=5
//
// Figures are logged, never asserted. Without -objects (or METASCRIPT_WIRECOST=1) only
// TestWatchCostSmoke runs: the same with 50 objects and one round, so that it keeps working.
package wirecost

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/controlplane"
	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagObjects = flag.Int("objects", 10000, "ConfigMaps each watch streams (TestWatchCost runs only when this flag or METASCRIPT_WIRECOST is set)")
	flagRounds  = flag.Int("rounds", 5, "watches of each encoding, taken in turn")
)

// encoding is a media type a watch asks for, and how its stream is cut into events: events
// returns a function that reads the next event of r and returns its size.
type encoding struct {
	name, accept string
	events       func(r *bufio.Reader) func() (int, error)
}

var encodings = []encoding{
	{"json", "application/json", lines},
	{"protobuf", "application/vnd.kubernetes.protobuf;stream=watch", lengthPrefixed},
	{"cbor", "application/cbor", cborItems},
}

func TestWatchCost(t *testing.T) {
	set := os.Getenv("METASCRIPT_WIRECOST") != ""
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "objects" })
	if !set {
		t.Skip("the watch cost benchmark runs with -objects=N or METASCRIPT_WIRECOST=1")
	}
	run(t, *flagObjects, *flagRounds)
}

// TestWatchCostSmoke is the benchmark at 50 objects, one round: it checks that every
// encoding is served and its events are read to the end.
func TestWatchCostSmoke(t *testing.T) { run(t, 50, 1) }

func run(t *testing.T, objects, rounds int) {
	cp, err := controlplane.Start(controlplane.Options{FeatureGates: "CBORServingAndStorage=true"})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	pid, err := cp.APIServerPID()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	ns := "wirecost"
	kube, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := enginetest.CreateConfigMaps(ctx, cp.Config, 8, objects, func(i int) *corev1.ConfigMap { return child(ns, i) }); err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSuffix(cp.Config.Host, "/") + "/api/v1/namespaces/" + ns +
		"/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

	type cost struct{ cpu, bytes []float64 }
	costs := map[string]*cost{}
	for r := range rounds {
		for i := range encodings {
			e := encodings[(i+r)%len(encodings)] // each goes first in its turn
			before, err := engineproc.CPUSeconds(pid)
			if err != nil {
				t.Fatal(err)
			}
			size, err := watchAll(ctx, client, url, e, objects)
			if err != nil {
				t.Fatalf("%s: %v", e.name, err)
			}
			after, err := engineproc.CPUSeconds(pid)
			if err != nil {
				t.Fatal(err)
			}
			c := costs[e.name]
			if c == nil {
				c = &cost{}
				costs[e.name] = c
			}
			c.cpu = append(c.cpu, (after-before)/float64(objects))
			c.bytes = append(c.bytes, float64(size)/float64(objects))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "wirecost: a watch streaming %d ConfigMaps, %d rounds; the API server's CPU per event (median, and range):\n", objects, rounds)
	for _, e := range encodings {
		c := costs[e.name]
		slices.Sort(c.cpu)
		fmt.Fprintf(&b, "  %-9s %6.1f µs (%.1f–%.1f), %5.0f bytes per event\n", e.name,
			1e6*c.cpu[len(c.cpu)/2], 1e6*c.cpu[0], 1e6*c.cpu[len(c.cpu)-1], c.bytes[0])
	}
	fmt.Fprintf(&b, "  (CPU is read from /proc in 10 ms ticks: a watch of %d events is read to ±%.1f µs per event)", objects, 1e4/float64(objects))
	t.Log(b.String())
}

// watchAll opens the watch at url in encoding e and reads its events until the bookmark
// that ends the initial ones (objects ADDED events, then it), returning the bytes read.
func watchAll(ctx context.Context, client *http.Client, url string, e encoding, objects int) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the watch
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", e.accept)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, strings.Split(e.accept, ";")[0]) {
		return 0, fmt.Errorf("asked for %s, served %s", e.accept, got)
	}
	next := e.events(bufio.NewReaderSize(resp.Body, 64<<10))
	total := 0
	for range objects + 1 {
		n, err := next()
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// lines reads JSON watch events: an object and a newline each (a newline inside a string is
// escaped).
func lines(r *bufio.Reader) func() (int, error) {
	return func() (int, error) {
		line, err := r.ReadSlice('\n')
		n := len(line)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = r.ReadSlice('\n')
			n += len(line)
		}
		return n, err
	}
}

// lengthPrefixed reads protobuf watch frames: a 4-byte big-endian length, then that many
// bytes.
func lengthPrefixed(r *bufio.Reader) func() (int, error) {
	return func() (int, error) {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return 0, err
		}
		n := binary.BigEndian.Uint32(size[:])
		_, err := io.CopyN(io.Discard, r, int64(n))
		return 4 + int(n), err
	}
}

// cborItems reads the data items of a CBOR sequence.
func cborItems(r *bufio.Reader) func() (int, error) {
	d := cbor.NewDecoder(r) // it reads ahead: one for the whole stream
	return func() (int, error) {
		var raw cbor.RawMessage
		if err := d.Decode(&raw); err != nil {
			return 0, err
		}
		return len(raw), nil
	}
}

// child is a ConfigMap shaped like the engine's children: its parent's labels, an
// ownerReference, the engine's applied-hash annotation, and a little data.
func child(ns string, i int) *corev1.ConfigMap {
	yes := true
	parent := fmt.Sprintf("parent-%05d", i/5)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", parent, i%5), Namespace: ns,
			Labels:      map[string]string{"fanout": parent, "app": "wirecost"},
			Annotations: map[string]string{"metascript.dev/applied-hash": "created:5f0c3d9a1b2e4c6d"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "bench.metascript.dev/v1", Kind: "Fanout", Name: parent,
				UID: "6c1f8e4a-2b3d-4e5f-8a9b-0c1d2e3f4a5b", Controller: &yes, BlockOwnerDeletion: &yes}}},
		Data: map[string]string{"index": fmt.Sprint(i % 5), "parent": parent},
	}
}
