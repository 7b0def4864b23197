// SPDX-License-Identifier: Apache-2.0

package topo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
)

// Config returns a daemon configuration for the lab: the balancer's
// interfaces, TCP and UDP services on the VIP and a TCP service on the
// IPv6 VIP, all on ServicePort, over every real, with the given scheduler.
func (t Topology) Config(scheduler string) string {
	all := make([]int, t.Reals)
	for i := range all {
		all[i] = i + 1
	}
	return t.ConfigWith(scheduler, all)
}

// ConfigWith is Config over the reals numbered in reals, in that order.
func (t Topology) ConfigWith(scheduler string, reals []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "interfaces: [%s]\nservices:\n", strings.Join(t.LBInterfaces(), ", "))
	for _, s := range []struct {
		proto    string
		vip, lip string
		v6       bool
	}{
		{"tcp", t.VIP().String(), t.LocalIP().String(), false},
		{"udp", t.VIP().String(), t.LocalIP().String(), false},
		{"tcp", t.VIP6().String(), t.LocalIP6().String(), true},
	} {
		fmt.Fprintf(&b, "  - vip: %s\n    port: %d\n    protocol: %s\n    scheduler: %s\n    local_ips: [%s]\n    reals:\n",
			s.vip, ServicePort, s.proto, scheduler, s.lip)
		for _, i := range reals {
			addr := t.RealAddr(i)
			if s.v6 {
				addr = t.RealAddr6(i)
			}
			fmt.Fprintf(&b, "      - {address: %q, port: %d, weight: 1}\n", addr, ServicePort)
		}
	}
	return b.String()
}

// Daemon is an xlb daemon running in the lab's balancer namespace.
type Daemon struct {
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	done    chan error
	exited  bool // done has been read
	Socket  string
	PinPath string
}

// Dir is the lab's directory: the daemon's config and socket, the
// servers' log.
func (t Topology) Dir() string { return filepath.Join(os.TempDir(), "xlb-lab-"+t.Name) }

// DaemonFiles are where a lab keeps its daemon's config, socket and pins.
func (t Topology) DaemonFiles() (config, socket, pins string) {
	dir := t.Dir()
	return filepath.Join(dir, "xlb.yaml"), filepath.Join(dir, "xlb.sock"), "/sys/fs/bpf/xlb-lab-" + t.Name
}

// StartDaemon runs `self daemon` in the balancer's network namespace
// (Exec keeps the host's bpffs, so the pinned maps outlive the process)
// and waits until its API answers.
func (t Topology) StartDaemon(ctx context.Context, self string, extra ...string) (*Daemon, error) {
	cfg, sock, pins := t.DaemonFiles()
	return StartDaemonIn(ctx, t.LB(), self, cfg, sock, pins, extra...)
}

// StartDaemonIn runs `self daemon` with the configuration file cfg, the
// API socket sock and the pin path pins in the network namespace ns and
// waits until its API answers.
func StartDaemonIn(ctx context.Context, ns, self, cfg, sock, pins string, extra ...string) (*Daemon, error) {
	args := append([]string{"daemon", "--config", cfg, "--socket", sock, "--pin-path", pins}, extra...)
	d := &Daemon{cmd: ExecIn(ns, self, args...), stderr: &bytes.Buffer{}, done: make(chan error, 1),
		Socket: sock, PinPath: pins}
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start daemon in %s: %w", ns, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	client := api.NewClient(sock)
	deadline := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := client.Version(cctx)
		cancel()
		if err == nil {
			return d, nil
		}
		select {
		case werr := <-d.done:
			return nil, fmt.Errorf("daemon in %s exited (%v): %s", ns, werr, d.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.Stop()
			return nil, fmt.Errorf("daemon API in %s not up after 20 s: %s", ns, d.stderr.String())
		}
	}
}

// Client returns an API client of the daemon.
func (d *Daemon) Client() *api.Client { return api.NewClient(d.Socket) }

// Stop asks the daemon to stop (SIGTERM: it removes the data path and
// everything it added) and waits for it; it kills the daemon after 10 s.
// A daemon that has exited already is stopped.
func (d *Daemon) Stop() error { return d.signalAndWait(syscall.SIGTERM) }

// HandOver asks the daemon to exit leaving its data path forwarding for
// the next daemon (SIGUSR2, what a systemd restart sends) and waits.
func (d *Daemon) HandOver() error { return d.signalAndWait(syscall.SIGUSR2) }

// Kill kills the daemon (SIGKILL, as a crash would) and waits for it.
func (d *Daemon) Kill() error {
	if d.exited {
		return nil
	}
	_ = d.cmd.Process.Kill()
	<-d.done
	d.exited = true
	return nil
}

func (d *Daemon) signalAndWait(sig syscall.Signal) error {
	if d.exited {
		return nil
	}
	_ = d.cmd.Process.Signal(sig)
	select {
	case err := <-d.done:
		d.exited = true
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if err != nil {
			return fmt.Errorf("daemon: %w: %s", err, d.stderr.String())
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		d.exited = true
		return fmt.Errorf("daemon did not exit within 10 s of %v: %s", sig, d.stderr.String())
	}
}

// Log returns what the daemon logged so far.
func (d *Daemon) Log() string { return d.stderr.String() }

// WriteConfig writes the daemon's configuration file.
func (t Topology) WriteConfig(yaml string) error {
	cfg, _, _ := t.DaemonFiles()
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		return err
	}
	return os.WriteFile(cfg, []byte(yaml), 0o600)
}

// RemoveDaemonFiles removes the daemon's files and pinned maps.
func (t Topology) RemoveDaemonFiles() {
	_, _, pins := t.DaemonFiles()
	_ = os.RemoveAll(t.Dir())
	_ = os.RemoveAll(pins)
}
