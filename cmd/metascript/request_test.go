package main

import (
	"bytes"
	"testing"
)

// TestHookRunCompletesRequest: a minimal request gets what the engine always sends: every
// group of the objects the controller writes, finalizing, related as customize selects, and
// the controller; what the request gives is kept.
func TestHookRunCompletesRequest(t *testing.T) {
	const (
		ctrl = "testdata/controllers/echo.yaml"
		r    = "testdata/requests/minimal/"
	)
	cases := []struct {
		name       string
		args       []string
		wantStdout string
		wantStderr string
	}{
		{name: "the parent alone", args: []string{"--controller", "echo", "--request", r + "parent.yaml"},
			wantStdout: `{"status":{"children":["ConfigMap.v1","Widget.example.com/v1"],"configMaps":0,"controller":"echo","finalizing":false,"related":["Deployment.apps/v1","Secret.v1"]}}`},
		{name: "kubectl get piped through jq {parent: ., children: {}}", args: []string{"--controller", "echo", "--request", r + "kubectl.json"},
			wantStdout: `{"status":{"children":["ConfigMap.v1","Widget.example.com/v1"],"configMaps":0,"controller":"echo","finalizing":false,"related":["Deployment.apps/v1","Secret.v1"]}}`},
		{name: "a parent being deleted is finalizing", args: []string{"--controller", "echo", "--hook", "finalize", "--request", r + "deleting.yaml"},
			wantStdout: `{"status":{"children":["ConfigMap.v1","Widget.example.com/v1"],"configMaps":0,"controller":"echo","finalizing":true,"related":["Deployment.apps/v1","Secret.v1"]}}`},
		{name: "given groups, related and finalizing are kept", args: []string{"--controller", "echo", "--request", r + "given.yaml"},
			wantStdout: `{"status":{"children":["ConfigMap.v1","Widget.example.com/v1"],"configMaps":1,"controller":"echo","finalizing":true,"related":["Secret.v1"]}}`},
		{name: "a kind not known offline, a webhook customize: noted, left out",
			args:       []string{"--controller", "echo-unknown", "--request", r + "parent.yaml"},
			wantStdout: `{"status":{"children":["ConfigMap.v1"],"related":{}}}`,
			wantStderr: "metascript hook run: testdata/controllers/echo.yaml: compositecontroller/echo-unknown hooks.customize (for request.related, left {}; write related: in the request to set it): a webhook, not called offline\n" +
				"metascript hook run: spec.childResources[0]: the kind of gadgets in example.com/v1 is not known offline: pass its CustomResourceDefinition with -f, or write one of its objects in the request; the request gets no group for it\n"},
		{name: "a decorator's target alone", args: []string{"--controller", "echo-decorator", "--request", r + "object.yaml"},
			wantStdout: `{"status":{"attachments":["ConfigMap.v1"],"configMaps":0,"finalizing":false,"related":{}}}`},
		{name: "a map call without outputs", args: []string{"--controller", "echo-map", "--request", r + "input.yaml"},
			wantStdout: `{"outputs":[{"apiVersion":"test.metascript.dev/v1","kind":"Copy","metadata":{"name":"echo"},"spec":{"copies":0,"outputs":["Copy.test.metascript.dev/v1"]}}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := hookRun(append([]string{"-f", ctrl, "--compact"}, c.args...), &stdout, &stderr)
			if code != exitOK || stdout.String() != c.wantStdout+"\n" || stderr.String() != c.wantStderr {
				t.Errorf("exit %d\nstdout %s\nstderr %s\nwant exit 0\nstdout %s\nstderr %s", code, stdout.String(), stderr.String(), c.wantStdout, c.wantStderr)
			}
		})
	}
}
