// SPDX-License-Identifier: Apache-2.0

package health

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the command in a process group of its own and
// kills the whole group when its context ends.
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
