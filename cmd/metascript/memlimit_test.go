package main

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	v2 := []byte("0::/kubepods/pod1/c1\n")
	v1 := []byte("5:cpuacct,cpu:/kubepods/pod1/c1\n4:memory:/kubepods/pod1/c1\n0::/\n")
	for _, tc := range []struct {
		name, spec, gomemlimit string
		cgroup                 []byte
		fs                     fstest.MapFS
		want                   int64
		from, err              string
	}{
		{name: "quantity", spec: "900Mi", want: 900 << 20, from: "--memory-limit"},
		{name: "none", spec: "none", cgroup: v2, fs: fstest.MapFS{"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("1000\n")}, from: "none"},
		{name: "not a quantity", spec: "lots", err: "want auto, none or a quantity"},
		{name: "zero", spec: "0", err: "must be above zero"},
		{name: "GOMEMLIMIT wins over auto", spec: "auto", gomemlimit: "1GiB", cgroup: v2,
			fs: fstest.MapFS{"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("1000\n")}, from: "GOMEMLIMIT"},
		{name: "v2, own cgroup", spec: "auto", cgroup: v2,
			fs: fstest.MapFS{"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("1000\n")}, want: 900,
			from: "/sys/fs/cgroup/kubepods/pod1/c1/memory.max"},
		{name: "v2, the lowest of the ancestors", spec: "auto", cgroup: v2, fs: fstest.MapFS{
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n"),
			"sys/fs/cgroup/kubepods/pod1/memory.max":    file("2000\n"),
			"sys/fs/cgroup/kubepods/memory.max":         file("3000\n")}, want: 1800,
			from: "/sys/fs/cgroup/kubepods/pod1/memory.max"},
		{name: "v2, a cgroup namespace's root", spec: "", cgroup: []byte("0::/\n"),
			fs: fstest.MapFS{"sys/fs/cgroup/memory.max": file("10000\n")}, want: 9000, from: "/sys/fs/cgroup/memory.max"},
		{name: "v2, no limit", spec: "auto", cgroup: v2,
			fs: fstest.MapFS{"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n")}, from: "none (no cgroup memory limit)"},
		{name: "v1", spec: "auto", cgroup: v1,
			fs: fstest.MapFS{"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": file("4096\n")}, want: 3686,
			from: "/sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes"},
		{name: "v1, the mount's root", spec: "auto", cgroup: v1,
			fs: fstest.MapFS{"sys/fs/cgroup/memory/memory.limit_in_bytes": file("4096\n")}, want: 3686,
			from: "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{name: "v1, unlimited", spec: "auto", cgroup: v1,
			fs:   fstest.MapFS{"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": file("9223372036854771712\n")},
			from: "none (no cgroup memory limit)"},
		{name: "no cgroup", spec: "auto", fs: fstest.MapFS{}, from: "none (no cgroup memory limit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "GOMEMLIMIT" {
					return tc.gomemlimit
				}
				return ""
			}
			got, from, err := memoryLimit(tc.spec, getenv, tc.cgroup, tc.fs)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(from, tc.from) {
				t.Fatalf("memoryLimit = %d from %q, want %d from %q", got, from, tc.want, tc.from)
			}
		})
	}
}
