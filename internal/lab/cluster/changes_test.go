// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/xlb-dev/xlb/internal/testenv"
)

// TestClusterNodeChanges holds 60 established connections through a
// node added, a node drained and a node killed: ECMP moves flows between
// nodes at each change, and connection sync keeps them (goal: none
// broken; on a kill, at most those not yet synced, here none). After the
// kill new connections fail until the router's hold time has passed.
func TestClusterNodeChanges(t *testing.T) {
	testenv.RequireTool(t, "nft")
	c := testCluster(t, 3, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	upWithServers(t, ctx, c)
	changes, err := c.NodeChanges(ctx, xlbBinary, 60, func(line string) { t.Log(line) })
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range changes {
		if ch.Broken != 0 {
			t.Errorf("%s: %d of %d connections broken: %v", ch.Change, ch.Broken, ch.Held, ch.Errors)
		}
	}
	kill := changes[len(changes)-1]
	t.Logf("after the kill new connections failed %d times, the last %v after it (router hold time %v)",
		kill.NewConnsFailed, kill.NewConnsBack.Round(time.Millisecond), RouterHold)
	if kill.NewConnsBack > 2*RouterHold {
		t.Errorf("new connections failed until %v after the kill, more than twice the hold time", kill.NewConnsBack)
	}
}
