// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
)

// TestOverrideMode covers --xdp-mode on a configuration given after the
// start: the flag fills in a left-out xdp_mode and replaces the one the
// starting file gave, and an explicit other mode is refused.
func TestOverrideMode(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		flag, fileMode, have string
		want                 string // the mode the configuration gets
		wantErr              string
	}{
		{name: "no flag, left out", want: ""},
		{name: "no flag, given", have: "generic", want: "generic"},
		{name: "left out", flag: "generic", want: "generic"},
		{name: "the flag's mode", flag: "generic", have: "generic", want: "generic"},
		{name: "another mode", flag: "generic", have: "native", wantErr: `xdp_mode: "native", but the daemon runs in "generic" mode (xlb daemon --xdp-mode generic)`},
		{name: "the default mode, explicit", flag: "native", have: "generic", wantErr: `xdp_mode: "generic", but the daemon runs in "native" mode`},
		{name: "the starting file's mode", flag: "generic", fileMode: "native", have: "native", want: "generic"},
		{name: "the starting file's mode, left out", flag: "generic", fileMode: "native", want: "generic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{XDPMode: tc.have}
			err := overrideMode(cfg, tc.flag, tc.fileMode)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if _, ok := err.(*config.ValidationError); !ok {
					t.Errorf("error %T, want a *config.ValidationError (a 400)", err)
				}
				return
			}
			if err != nil || cfg.XDPMode != tc.want {
				t.Fatalf("xdp_mode %q, %v; want %q", cfg.XDPMode, err, tc.want)
			}
		})
	}
}

// TestXDPModeFlagLive runs the daemon with --xdp-mode generic on a file
// that leaves xdp_mode out, then on one that gives native: in both, a
// SIGHUP reload and an apply of a file without xdp_mode, or with the
// starting file's, are made in the flag's mode, and an apply that asks
// for another mode than the daemon's is refused, naming it.
func TestXDPModeFlagLive(t *testing.T) {
	for _, tc := range []struct {
		name, fileMode string
		refused        string // the mode an apply may not ask for
	}{
		{"file without xdp_mode", "", "native"},
		{"file with xdp_mode native", "native", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, liveConfig(tc.fileMode), "generic")
			if err := d.reload(t, liveConfig(tc.fileMode, 10), "10.251.1.10"); err != nil {
				t.Fatalf("SIGHUP of the file with a real added was refused:\n%v", err)
			}
			cl := api.NewClient(d.sock)
			ctx := context.Background()
			for _, mode := range []string{"", "generic", tc.fileMode} {
				if _, err := cl.Apply(ctx, []byte(liveConfig(mode, 11))); err != nil {
					t.Errorf("apply with xdp_mode %q: %v", mode, err)
				}
			}
			cfg, err := cl.Config(ctx)
			if err != nil || cfg.XDPMode != "generic" || len(cfg.Services[0].Reals) != 1 {
				t.Errorf("configuration in force: %+v, %v; want generic with the real of the last apply", cfg, err)
			}
			if tc.refused == "" {
				return
			}
			before, err := cl.Config(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Apply(ctx, []byte(liveConfig(tc.refused, 12)))
			want := `xdp_mode: "native", but the daemon runs in "generic" mode`
			if !api.IsClientError(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("apply with xdp_mode %s: %v; want a 400 with %q", tc.refused, err, want)
			}
			if after, err := cl.Config(ctx); err != nil || len(after.Services[0].Reals) != 1 || after.Services[0].Reals[0].Address != before.Services[0].Reals[0].Address {
				t.Errorf("a refused apply changed the configuration: %+v, %v", after, err)
			}
		})
	}
}

// TestApplyNamesAMissingInterface: an apply naming an interface this
// host does not have is refused naming it as such; one naming another
// interface that exists is refused because interfaces change only at a
// restart.
func TestApplyNamesAMissingInterface(t *testing.T) {
	d := startDaemon(t, liveConfig(""), "")
	cl := api.NewClient(d.sock)
	for _, tc := range []struct{ iface, want string }{
		{"xlbnosuch0", `interfaces[1]: "xlbnosuch0" is not an interface of this host`},
		{"lo", "changing the attached interfaces needs a daemon restart"},
	} {
		doc := strings.Replace(liveConfig(""), "interfaces: ["+liveIf+"]", "interfaces: ["+liveIf+", "+tc.iface+"]", 1)
		_, err := cl.Apply(context.Background(), []byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("apply with interface %s: %v; want %q", tc.iface, err, tc.want)
		}
	}
	d.stop(t)
}

// TestReloadSaysItDropsLiveEdits: a change made through the API makes the
// status warn that a reload would drop it; the reload logs that it did.
func TestReloadSaysItDropsLiveEdits(t *testing.T) {
	d := startDaemon(t, liveConfig("", 10), "")
	cl := api.NewClient(d.sock)
	ctx := context.Background()
	st, err := cl.Status(ctx)
	if err != nil || len(st.Warnings) != 0 && strings.Contains(strings.Join(st.Warnings, "\n"), "a reload drops them") {
		t.Fatalf("status before any edit: %v %v", st.Warnings, err)
	}
	w := 1
	if _, err := cl.Change(ctx, "POST", api.ServicePath("tcp", "10.251.0.1", 80)+"/reals", config.Real{Address: "10.251.1.11", Port: 8080, Weight: &w}); err != nil {
		t.Fatal(err)
	}
	st, err = cl.Status(ctx)
	if err != nil || !strings.Contains(strings.Join(st.Warnings, "\n"), "since "+d.cfgPath+" was read (revision 1): a reload drops them; xlb config export") {
		t.Fatalf("status after an edit through the API: %q %v", st.Warnings, err)
	}
	if err := d.reload(t, liveConfig("", 10, 12), "10.251.1.12"); err != nil {
		t.Fatal(err)
	}
	// the reload logs once it has applied (the configuration in force
	// shows first)
	const said = "reload: the file replaced a configuration changed through the API or the CLI since it was read (revision 1)"
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(d.log.String(), said); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the reload did not say it dropped the live edit:\n%s", d.log)
		}
	}
	d.stop(t)
}
