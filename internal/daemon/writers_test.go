// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/config"
)

// TestConcurrentWriters starts writers at once against the real daemon
// (an xlb built with -race, whose log must report no data race), each
// adding its own real through the client's read-modify-write path
// (api.Client.Edit, as xlb ipvsadm -R, -C and --set use it): every real
// must be there afterwards, in the configuration and in the data path,
// and the revision must have counted each change once. Without If-Match
// the writers read the same configuration and overwrite each other's
// reals.
func TestConcurrentWriters(t *testing.T) {
	d := startDaemon(t, liveConfig(""), "")
	ctx := context.Background()
	const writers = 8 // < api.EditAttempts: every writer gets its turn
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			cl := api.NewClient(d.sock)
			<-start
			_, errs[i] = cl.Edit(ctx, func(cfg *config.Config) error {
				cfg.Services[0].Reals = append(cfg.Services[0].Reals, config.Real{Address: fmt.Sprintf("10.251.1.%d", 10+i), Port: 8080})
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	cl := api.NewClient(d.sock)
	cfg, rev, err := cl.ConfigRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := cl.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inConfig, inDataPath []string
	for _, r := range cfg.Services[0].Reals {
		inConfig = append(inConfig, r.Address)
	}
	for _, r := range svcs[0].Reals {
		inDataPath = append(inDataPath, r.Address.String())
	}
	slices.Sort(inConfig)
	slices.Sort(inDataPath)
	var want []string
	for i := range writers {
		want = append(want, fmt.Sprintf("10.251.1.%d", 10+i))
	}
	slices.Sort(want)
	if !slices.Equal(inConfig, want) || !slices.Equal(inDataPath, want) {
		t.Errorf("reals in the configuration %v, in the data path %v; want every writer's: %v", inConfig, inDataPath, want)
	}
	if rev != 1+writers {
		t.Errorf("revision %d, want %d: one per writer's change", rev, 1+writers)
	}
}
