// SPDX-License-Identifier: Apache-2.0

package health

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/xlb-dev/xlb/internal/config"
)

// MaxExecOutput bounds the output (stdout and stderr together) kept of
// an exec check's command for the failure reason; the rest is read and
// discarded, so a command that writes without end never blocks.
const MaxExecOutput = 4 << 10

// execWaitDelay is how long the output of a command that has ended (or
// been killed) is still read, when a process it left behind holds it
// open; then it is closed.
const execWaitDelay = time.Second

// defaultPath is the commands' PATH when the daemon has none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// checkExec runs the check's command, as its user, with the target in
// its environment; exit status 0 is healthy. It first takes a slot of
// slots (nil: no bound), waiting for one within the check's timeout.
// The command's process group is killed at the timeout, so a hung
// script cannot pile up.
func checkExec(ctx context.Context, c config.HealthCheck, t Target, slots *Limiter) error {
	cmd, err := execCommand(ctx, c, t)
	if err != nil {
		return err
	}
	if slots != nil {
		if err := slots.Acquire(ctx); err != nil {
			return fmt.Errorf("not started: %d exec checks were running (exec_checks.max_running) until the timeout", slots.Limit())
		}
		defer slots.Release()
	}
	out := &cappedBuffer{max: MaxExecOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		return nil // exited 0; a process it left behind held its output open
	}
	if ctx.Err() != nil {
		return fmt.Errorf("command timed out: %w", ctx.Err())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if cmd.SysProcAttr.Credential != nil && errors.Is(err, syscall.EPERM) {
			return fmt.Errorf("command: start as user %s (uid %d): %w", c.User, cmd.SysProcAttr.Credential.Uid, err)
		}
		return fmt.Errorf("command: %w", err)
	}
	if msg := out.String(); msg != "" {
		return fmt.Errorf("command %s: %s", ee.ProcessState, msg)
	}
	return fmt.Errorf("command %s", ee.ProcessState)
}

// execCommand prepares the check's command: split into words or given
// to /bin/sh, run from / as the check's user and group, in a process
// group of its own, with an environment of its own.
func execCommand(ctx context.Context, c config.HealthCheck, t Target) (*exec.Cmd, error) {
	u, err := config.LookupExecUser(c.User, c.Group)
	if err != nil {
		return nil, fmt.Errorf("command's user: %w", err)
	}
	argv := []string{"/bin/sh", "-c", c.Command}
	if !c.Shell {
		if argv, err = config.SplitCommand(c.Command); err != nil {
			return nil, fmt.Errorf("command: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("command: %w", cmd.Err)
	}
	cmd.Dir = "/"
	cmd.Env = execEnv(c, t, u)
	cmd.WaitDelay = execWaitDelay
	setProcessGroup(cmd)
	if int(u.UID) != os.Geteuid() || int(u.GID) != os.Getegid() {
		// Groups nil clears the supplementary groups: none of the
		// daemon's is kept
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
	return cmd, nil
}

// execEnv is a command's whole environment: nothing of the daemon's but
// its PATH.
func execEnv(c config.HealthCheck, t Target, u config.ExecUser) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	home := u.Home
	if home == "" {
		home = "/"
	}
	addr := t.addr(c)
	return []string{"PATH=" + path, "HOME=" + home, "USER=" + u.Name, "LOGNAME=" + u.Name,
		"XLB_REAL_ADDR=" + addr.Addr().String(), "XLB_REAL_PORT=" + strconv.Itoa(int(addr.Port())),
		"XLB_VIP=" + t.Service.VIP.String(), "XLB_VPORT=" + strconv.Itoa(int(t.Service.Port)),
		"XLB_PROTOCOL=" + t.Service.Proto.String(), "XLB_LOCAL_IP=" + sourceString(t.Source)}
}

// cappedBuffer keeps the first max bytes written to it and counts the
// rest, which it discards.
type cappedBuffer struct {
	b       []byte
	max     int
	dropped int64
}

// Write keeps what fits and never fails, so the copy from the command's
// pipe goes on to its end.
func (c *cappedBuffer) Write(p []byte) (int, error) {
	keep := min(len(p), c.max-len(c.b))
	c.b = append(c.b, p[:keep]...)
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}

// String is the output kept, trimmed, as valid UTF-8, with a note of
// how much was not kept.
func (c *cappedBuffer) String() string {
	s := strings.ToValidUTF8(strings.TrimSpace(string(c.b)), "\uFFFD")
	if c.dropped > 0 {
		s += fmt.Sprintf(" [%d more bytes of output not kept]", c.dropped)
	}
	return s
}
