//go:build !linux

package isolated

import (
	"errors"
	"os/exec"
)

func applyLimits(workerConfig) (*cpuLimit, int64, error) {
	return nil, 0, errors.New("the isolated tier's workers need Linux")
}

type cpuLimit struct{}

func (*cpuLimit) arm() error { return nil }

func (s *cgroupSlot) attach(*exec.Cmd) error {
	return errors.New("the isolated tier's cgroups need Linux")
}
