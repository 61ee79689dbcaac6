package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos string
		wantV   bool
		wantRun string
	}{
		{args: []string{"a.yaml", "b.yaml"}, wantPos: "a.yaml b.yaml"},
		{args: []string{"-v", "a.yaml", "--run", "x", "b.yaml"}, wantPos: "a.yaml b.yaml", wantV: true, wantRun: "x"},
		{args: []string{"a.yaml", "-v"}, wantPos: "a.yaml", wantV: true},
		{args: []string{"a.yaml", "--", "-v", "b.yaml"}, wantPos: "a.yaml -v b.yaml"},
		{args: []string{"--", "-v"}, wantPos: "-v"},
		{args: nil, wantPos: ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			v := fs.Bool("v", false, "")
			run := fs.String("run", "", "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(pos, " ") != tt.wantPos || *v != tt.wantV || *run != tt.wantRun {
				t.Errorf("positional %q, -v %v, --run %q; want %q, %v, %q", pos, *v, *run, tt.wantPos, tt.wantV, tt.wantRun)
			}
		})
	}
}
