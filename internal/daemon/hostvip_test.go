// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/apply"
	"github.com/xlb-dev/xlb/internal/config"
	"github.com/xlb-dev/xlb/internal/datapath"
	"github.com/xlb-dev/xlb/internal/health"
	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/testenv"
)

// hostVIPConfig has a port-0 service on 10.77.0.1, the address of the
// test namespace's interface.
const hostVIPConfig = `interfaces: [xd0]
xdp_mode: generic
services:
  - {vip: 10.77.0.1, port: 0, protocol: tcp}
`

// TestHostVIPRefused: in a namespace whose interface has 10.77.0.1, a
// service on that VIP (without host_address) is refused, with its field
// path, when the daemon starts and when it applies a configuration,
// before the data path changes.
func TestHostVIPRefused(t *testing.T) {
	testenv.RequireRoot(t, "creates a network namespace and loads the data path")
	testenv.RequireTool(t, "ip")
	ns := fmt.Sprintf("xlbt-hv-%d", os.Getpid())
	if err := netns.IP("netns", "add", ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = netns.IP("netns", "del", ns) })
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "xd0", "type", "veth", "peer", "name", "xd1"},
		{"link", "set", "xd0", "up"},
		{"link", "set", "xd1", "up"},
		{"addr", "add", "10.77.0.1/24", "dev", "xd0"},
	} {
		if err := netns.IPIn(ns, args...); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "xlb.yaml")
	if err := os.WriteFile(path, []byte(hostVIPConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const want = "services[0].vip: 10.77.0.1 is an address this host already has"

	// at start: refused as a configuration error, nothing kept (a daemon
	// that starts instead stops at the deadline)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := netns.Run(ns, func() error {
		return Run(ctx, Options{ConfigPath: path, Socket: filepath.Join(dir, "api.sock"), PinPath: "none", Log: log})
	})
	var ce *ConfigError
	if !errors.As(err, &ce) || !errors.Is(err, config.ErrHostAddress) || !strings.Contains(err.Error(), want) {
		t.Fatalf("start: got %v, want a configuration error with %q", err, want)
	}

	// by an apply: refused, the data path unchanged
	cfg, err := config.Parse([]byte(hostVIPConfig))
	if err != nil {
		t.Fatal(err)
	}
	err = netns.Run(ns, func() error {
		dp, err := datapath.Load(datapath.Options{CPUs: 1})
		if err != nil {
			return err
		}
		defer dp.Close()
		d := &Daemon{dp: dp, log: log, cur: &config.Desired{Interfaces: []string{"xd0"}, Mode: loadbalancer.ModeGeneric, Settings: dp.Settings()}}
		d.health = health.NewMonitor(d.onTransition)
		defer d.health.Close()
		_, err = d.apply(cfg)
		if !errors.Is(err, config.ErrHostAddress) || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("apply: got %v, want %q", err, want)
		}
		if now, err := apply.Observed(dp); err != nil || len(now.Services) != 0 {
			return fmt.Errorf("after the refusal the data path holds %+v (%v)", now, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
