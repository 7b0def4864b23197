// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/datapath"
)

// TestConnTableSizeLive: the daemon sizes its tables from conn_table,
// logs and shows their size and memory, and refuses an apply that asks
// for another size, changing nothing.
func TestConnTableSizeLive(t *testing.T) {
	const sized = "conn_table: {ipv4: 4096, ipv6: 1024}\n"
	d := startDaemon(t, sized+liveConfig("generic", 10), "")
	for _, want := range []string{`family=ipv4 connections=4096 memory="0.8 MiB"`, `family=ipv6 connections=1024 memory="0.4 MiB"`} {
		if !strings.Contains(d.log.String(), want) {
			t.Errorf("the start log lacks %q:\n%s", want, d.log)
		}
	}
	cl := api.NewClient(d.sock)
	ctx := context.Background()
	st, err := cl.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		family string
		conns  uint32
	}{{"ipv4", 4096}, {"ipv6", 1024}} {
		if i >= len(st.ConnTables) {
			t.Fatalf("stats show %d tables", len(st.ConnTables))
		}
		got := st.ConnTables[i]
		if got.Family != want.family || got.Connections != want.conns || got.MaxEntries != 2*uint64(want.conns) ||
			got.MemoryBytes != datapath.ConnTableBytes(want.family == "ipv6", want.conns) {
			t.Errorf("stats of the %s table: %+v, want %d connections and their memory", want.family, got, want.conns)
		}
	}

	if _, err := cl.Apply(ctx, []byte(sized+liveConfig("generic", 11))); err != nil {
		t.Fatalf("apply with the same sizes: %v", err)
	}
	_, err = cl.Apply(ctx, []byte("conn_table: {ipv4: 8192, ipv6: 1024}\n"+liveConfig("generic", 12)))
	want := "conn_table: ipv4 8192, ipv6 1024: the running tables hold 4096 IPv4 and 1024 IPv6 connections"
	if !api.IsClientError(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("apply with another size: %v; want a 400 with %q", err, want)
	}
	if cfg, err := cl.Config(ctx); err != nil || cfg.Services[0].Reals[0].Address != "10.251.1.11" || cfg.ConnTable.IPv4 != 4096 {
		t.Errorf("a refused apply changed the configuration: %+v, %v", cfg, err)
	}
}
