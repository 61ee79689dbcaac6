package isolated

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanCgroups decides from fake /proc and /sys trees (testdata/cgroup/<case>/, whose
// files are at their absolute paths under the case directory; a path listed in the case's
// READONLY file is not writable) whether workers get cgroups.
func TestPlanCgroups(t *testing.T) {
	for _, tc := range []struct {
		dir string
		// want is the plan, or nil with a reason containing why.
		want *CgroupPlan
		why  string
	}{
		{"hybrid", nil, "not cgroup2 (cgroup v1 or hybrid)"},
		{"v1", nil, "not cgroup2"},
		{"v2-delegated", &CgroupPlan{Dir: "/sys/fs/cgroup/user.slice/metascript", CPU: true, MoveEngine: true}, ""},
		{"v2-enabled", &CgroupPlan{Dir: "/sys/fs/cgroup/system.slice/metascript.service", CPU: false, MoveEngine: false}, ""},
		{"v2-no-memory", nil, "memory controller is not delegated"},
		{"v2-readonly", nil, "is not writable"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			root := filepath.Join("testdata", "cgroup", tc.dir)
			ro, _ := os.ReadFile(filepath.Join(root, "READONLY"))
			plan, why := planCgroups(cgroupView{
				read: func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, p)) },
				writable: func(p string) bool {
					if _, err := os.Stat(filepath.Join(root, p)); errors.Is(err, fs.ErrNotExist) {
						return false
					}
					return !strings.Contains(string(ro), p+"\n")
				},
			})
			if tc.want == nil {
				if plan != nil || !strings.Contains(why, tc.why) {
					t.Errorf("got %+v, %q; want none because %q", plan, why, tc.why)
				}
				return
			}
			if plan == nil || *plan != *tc.want {
				t.Errorf("got %+v (%s), want %+v", plan, why, tc.want)
			}
		})
	}
}
