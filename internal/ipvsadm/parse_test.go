// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// want builds the Command a test expects: kind, weight 1 (the default),
// then edits.
func want(k Kind, edits ...func(*Command)) *Command {
	c := &Command{Kind: k, Weight: 1}
	for _, e := range edits {
		e(c)
	}
	return c
}

func tcp(s string) func(*Command) {
	return func(c *Command) { c.Service = Service{Proto: "tcp", Addr: netip.MustParseAddrPort(s)} }
}

func udp(s string) func(*Command) {
	return func(c *Command) { c.Service = Service{Proto: "udp", Addr: netip.MustParseAddrPort(s)} }
}

func sched(s string) func(*Command) { return func(c *Command) { c.Scheduler = s } }

func real(s string) func(*Command) { return func(c *Command) { c.Real = netip.MustParseAddrPort(s) } }

func weight(w int) func(*Command) { return func(c *Command) { c.Weight = w } }

func persist(p int, mask string) func(*Command) {
	return func(c *Command) { c.Persistent, c.Netmask = p, mask }
}

func laddr(s string) func(*Command) { return func(c *Command) { c.LocalIP = s } }

func list(o ListOptions) func(*Command) { return func(c *Command) { c.List = o } }

func TestParse(t *testing.T) {
	const svc = "10.0.0.1:80"
	for _, tc := range []struct {
		name string
		have string // the arguments, split on spaces
		want *Command
	}{
		{"no arguments list", "", want(List)},
		{"-L", "-L", want(List)},
		{"-l", "-l", want(List)},
		{"--list", "--list", want(List)},
		{"-Ln", "-Ln", want(List, list(ListOptions{Numeric: true}))},
		{"-nL", "-nL", want(List, list(ListOptions{Numeric: true}))},
		{"-L --numeric", "-L --numeric", want(List, list(ListOptions{Numeric: true}))},
		{"--stats", "-L -n --stats", want(List, list(ListOptions{Numeric: true, Stats: true}))},
		{"--rate", "-L -n --rate", want(List, list(ListOptions{Numeric: true, Rate: true}))},
		{"--stats --exact", "-Ln --stats --exact", want(List, list(ListOptions{Numeric: true, Stats: true, Exact: true}))},
		{"-X", "-LnX --stats", want(List, list(ListOptions{Numeric: true, Stats: true, Exact: true}))},
		{"-c", "-L -n -c", want(List, list(ListOptions{Numeric: true, Connection: true}))},
		{"-Lnc", "-Lnc", want(List, list(ListOptions{Numeric: true, Connection: true}))},
		{"--connection", "--list --connection", want(List, list(ListOptions{Connection: true}))},
		{"-c --persistent-conn", "-Lc --persistent-conn", want(List, list(ListOptions{Connection: true, PersistentConn: true}))},
		{"--timeout", "-L --timeout", want(List, list(ListOptions{Timeout: true}))},
		{"--daemon", "-L --daemon", want(List, list(ListOptions{Daemon: true}))},
		{"--thresholds", "-L --thresholds", want(List, list(ListOptions{Thresholds: true}))},
		{"--persistent-conn", "-L --persistent-conn", want(List, list(ListOptions{PersistentConn: true}))},
		{"--nosort", "-L --nosort", want(List, list(ListOptions{NoSort: true}))},
		{"--sort is a no-op", "-L --sort", want(List)},
		{"list a service", "-L -n -t " + svc, want(List, tcp(svc), list(ListOptions{Numeric: true}))},
		{"list combined with value next", "-Lnt " + svc, want(List, tcp(svc), list(ListOptions{Numeric: true}))},
		{"list value attached", "-Lnt" + svc, want(List, tcp(svc), list(ListOptions{Numeric: true}))},

		{"add", "-A -t " + svc + " -s rr", want(AddService, tcp(svc), sched("rr"))},
		{"add long", "--add-service --tcp-service=" + svc + " --scheduler rr", want(AddService, tcp(svc), sched("rr"))},
		{"add combined -At", "-At " + svc + " -s wrr", want(AddService, tcp(svc), sched("wrr"))},
		{"add default scheduler", "-A -t " + svc, want(AddService, tcp(svc), sched("wlc"))},
		{"add every scheduler lc", "-A -t " + svc + " -s lc", want(AddService, tcp(svc), sched("lc"))},
		{"add sh", "-A -t " + svc + " -s sh", want(AddService, tcp(svc), sched("sh"))},
		{"add mh", "-A -t " + svc + " -s mh", want(AddService, tcp(svc), sched("mh"))},
		{"add udp IPv6", "-A -u [2001:db8::1]:53 -s sh", want(AddService, udp("[2001:db8::1]:53"), sched("sh"))},
		{"add --udp-service", "-A --udp-service 10.0.0.1:53 -s rr", want(AddService, udp("10.0.0.1:53"), sched("rr"))},
		{"add without port", "-A -t 10.0.0.1 -s rr -p", want(AddService, tcp("10.0.0.1:0"), sched("rr"), persist(300, ""))},
		{"add bare IPv6", "-A -t 2001:db8::1 -s rr -p 60", want(AddService, tcp("[2001:db8::1]:0"), sched("rr"), persist(60, ""))},
		{"add every port explicitly", "-A -t 10.0.0.1:0 -s rr", want(AddService, tcp("10.0.0.1:0"), sched("rr"))},
		{"edit without port, persistent", "-E -u 10.0.0.1 -s sh -p", want(EditService, udp("10.0.0.1:0"), sched("sh"), persist(300, ""))},
		{"add real to a service without port", "-a -t 10.0.0.1 -r 10.0.1.1", want(AddReal, tcp("10.0.0.1:0"), real("10.0.1.1:0"))},
		{"persistent default", "-A -t " + svc + " -s rr -p", want(AddService, tcp(svc), sched("rr"), persist(300, ""))},
		{"persistent value", "-A -t " + svc + " -p 600 -s rr", want(AddService, tcp(svc), sched("rr"), persist(600, ""))},
		{"persistent attached", "-A -t " + svc + " -p600", want(AddService, tcp(svc), sched("wlc"), persist(600, ""))},
		{"persistent long =", "-A -t " + svc + " --persistent=60", want(AddService, tcp(svc), sched("wlc"), persist(60, ""))},
		{"persistent long next", "-A -t " + svc + " --persistent 60", want(AddService, tcp(svc), sched("wlc"), persist(60, ""))},
		{"persistent before option", "-A -t " + svc + " -p -s rr", want(AddService, tcp(svc), sched("rr"), persist(300, ""))},
		{"netmask", "-A -t " + svc + " -p -M 255.255.255.0", want(AddService, tcp(svc), sched("wlc"), persist(300, "255.255.255.0"))},
		{"netmask before service", "-A -M 255.255.0.0 -p 10 -t " + svc, want(AddService, tcp(svc), sched("wlc"), persist(10, "255.255.0.0"))},
		{"netmask long", "-A -t " + svc + " -p --netmask=255.255.255.128", want(AddService, tcp(svc), sched("wlc"), persist(300, "255.255.255.128"))},
		{"netmask whole address", "-A -t " + svc + " -p -M 255.255.255.255", want(AddService, tcp(svc), sched("wlc"), persist(300, ""))},
		{"netmask IPv6", "-A -t [2001:db8::1]:80 -p -M 64", want(AddService, tcp("[2001:db8::1]:80"), sched("wlc"), persist(300, "64"))},
		{"netmask IPv6 whole", "-A -t [2001:db8::1]:80 -p -M 128", want(AddService, tcp("[2001:db8::1]:80"), sched("wlc"), persist(300, ""))},
		{"add with laddr", "-A -t " + svc + " -s rr -z 10.0.0.254", want(AddService, tcp(svc), sched("rr"), laddr("10.0.0.254"))},
		{"add with --laddr", "-A -t " + svc + " -s rr --laddr=10.0.0.254", want(AddService, tcp(svc), sched("rr"), laddr("10.0.0.254"))},
		{"edit", "-E -t " + svc + " -s wrr -p 60", want(EditService, tcp(svc), sched("wrr"), persist(60, ""))},
		{"edit long", "--edit-service -t " + svc, want(EditService, tcp(svc), sched("wlc"))},
		{"delete", "-D -t " + svc, want(DeleteService, tcp(svc))},
		{"delete long", "--delete-service --udp-service " + svc, want(DeleteService, udp(svc))},
		{"clear", "-C", want(Clear)},
		{"clear long", "--clear", want(Clear)},
		{"zero all", "-Z", want(Zero)},
		{"zero one", "--zero -t " + svc, want(Zero, tcp(svc))},

		{"add real", "-a -t " + svc + " -r 10.0.1.1:8080 -w 5", want(AddReal, tcp(svc), real("10.0.1.1:8080"), weight(5))},
		{"add real port from service", "-a -t " + svc + " -r 10.0.1.1", want(AddReal, tcp(svc), real("10.0.1.1:80"))},
		{"add real port before service", "-a -r 10.0.1.1 -t " + svc, want(AddReal, tcp(svc), real("10.0.1.1:80"))},
		{"add real -b", "-a -t " + svc + " -r 10.0.1.1:80 -b -w 1", want(AddReal, tcp(svc), real("10.0.1.1:80"))},
		{"add real --fullnat", "--add-server -t " + svc + " --real-server 10.0.1.1 --fullnat --weight=0", want(AddReal, tcp(svc), real("10.0.1.1:80"), weight(0))},
		{"add real weight attached", "-a -t " + svc + " -r 10.0.1.1 -w65535", want(AddReal, tcp(svc), real("10.0.1.1:80"), weight(65535))},
		{"add real IPv6", "-a -t [2001:db8::1]:80 -r [2001:db8::2]:8080", want(AddReal, tcp("[2001:db8::1]:80"), real("[2001:db8::2]:8080"))},
		{"add real bare IPv6", "-a -t [2001:db8::1]:80 -r 2001:db8::2", want(AddReal, tcp("[2001:db8::1]:80"), real("[2001:db8::2]:80"))},
		{"edit real", "-e -t " + svc + " -r 10.0.1.1:8080 -w 3", want(EditReal, tcp(svc), real("10.0.1.1:8080"), weight(3))},
		{"edit real default weight", "--edit-server -t " + svc + " -r 10.0.1.1:8080", want(EditReal, tcp(svc), real("10.0.1.1:8080"))},
		{"delete real", "-d -t " + svc + " -r 10.0.1.1:8080", want(DeleteReal, tcp(svc), real("10.0.1.1:8080"))},
		{"delete real long", "--delete-server -u " + svc + " -r 10.0.1.1", want(DeleteReal, udp(svc), real("10.0.1.1:80"))},

		{"set", "--set 900 120 300", want(SetTimeouts, func(c *Command) { c.Timeouts = Timeouts{900, 120, 300} })},
		{"set zeros", "--set 0 0 60", want(SetTimeouts, func(c *Command) { c.Timeouts = Timeouts{0, 0, 60} })},
		{"restore", "-R", want(Restore)},
		{"restore long", "--restore", want(Restore)},
		{"save", "-S", want(Save)},
		{"save -n", "-S -n", want(Save, list(ListOptions{Numeric: true}))},
		{"save long", "--save --numeric", want(Save, list(ListOptions{Numeric: true}))},
		{"add laddr", "-P -t " + svc + " -z 10.0.0.254", want(AddLaddr, tcp(svc), laddr("10.0.0.254"))},
		{"add laddr range", "-P -t " + svc + " -z 10.0.0.100-149", want(AddLaddr, tcp(svc), laddr("10.0.0.100-149"))},
		{"add with laddr range", "-A -t " + svc + " -s rr -z 10.0.0.100-149", want(AddService, tcp(svc), sched("rr"), laddr("10.0.0.100-149"))},
		{"add laddr -F", "--add-laddr -t " + svc + " -z 10.0.0.254 -F dpdk0", want(AddLaddr, tcp(svc), laddr("10.0.0.254"), func(c *Command) { c.Ifname = "dpdk0" })},
		{"add laddr --ifname", "-P -t " + svc + " --laddr 10.0.0.254 --ifname=eth0", want(AddLaddr, tcp(svc), laddr("10.0.0.254"), func(c *Command) { c.Ifname = "eth0" })},
		{"del laddr", "-Q -t " + svc + " -z 10.0.0.254", want(DelLaddr, tcp(svc), laddr("10.0.0.254"))},
		{"del laddr long", "--del-laddr -t " + svc + " -z 10.0.0.254", want(DelLaddr, tcp(svc), laddr("10.0.0.254"))},
		{"get laddr", "-G", want(GetLaddr)},
		{"get laddr of one", "--get-laddr -t " + svc, want(GetLaddr, tcp(svc))},
		{"help", "-h", want(Help)},
		{"help long", "--help", want(Help)},
		{"version", "-v", want(Version)},
		{"version long", "--version", want(Version)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.Fields(tc.have))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.have, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tc.have, got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	const svc = "-t 10.0.0.1:80"
	const zeroPort = "Zero port specified for non-persistent service: give VIP:PORT (VIP:0 for every port of the VIP)"
	for _, tc := range []struct {
		name string
		have string
		want string // the whole message
	}{
		{"weight too big", "-a " + svc + " -r 10.0.1.1 -w 70000", "-w 70000: weight must be 0 to 65535"},
		{"weight negative", "-a " + svc + " -r 10.0.1.1 --weight=-1", "--weight -1: weight must be 0 to 65535"},
		{"weight not a number", "-a " + svc + " -r 10.0.1.1 -w x", "-w x: weight must be 0 to 65535"},
		{"gatewaying", "-a " + svc + " -r 10.0.1.1 -g", "-g (gatewaying): xlb forwards in FullNAT only: use -b (or leave the method out)"},
		{"masquerading", "-a " + svc + " -r 10.0.1.1 -m", "-m (masquerading): xlb forwards in FullNAT only: use -b (or leave the method out)"},
		{"ipip", "-a " + svc + " -r 10.0.1.1 --ipip", "--ipip (ipip): xlb forwards in FullNAT only: use -b (or leave the method out)"},
		{"scheduler xlb lacks", "-A " + svc + " -s sed", "-s sed: xlb has no sed scheduler (it has rr, wrr, lc, wlc, sh, mh)"},
		{"unknown scheduler", "-A " + svc + " -s fastest", "-s fastest: unknown scheduler (want one of rr, wrr, lc, wlc, sh, mh)"},
		{"persistent 0", "-A " + svc + " -p 0", "-p 0: persistence timeout must be 1 to 2678400 seconds"},
		{"persistent too long", "-A " + svc + " -p 2678401", "-p 2678401: persistence timeout must be 1 to 2678400 seconds"},
		{"bad service", "-A -t 10.0.0.300:80", "-t 10.0.0.300:80: illegal virtual server address[:port]: want an IP address (host names are not looked up)"},
		{"host name", "-A -t www.example.com:80", "-t www.example.com:80: illegal virtual server address[:port]: want an IP address (host names are not looked up)"},
		{"port name", "-A -t 10.0.0.1:http", `-t 10.0.0.1:http: illegal virtual server address[:port]: port "http": want a number from 0 to 65535 (service names are not looked up)`},
		{"port too big", "-A -t 10.0.0.1:65536", `-t 10.0.0.1:65536: illegal virtual server address[:port]: port "65536": want a number from 0 to 65535 (service names are not looked up)`},
		{"add without port", "-A -t 10.0.0.1", zeroPort},
		{"add without port, udp", "-A -u 10.0.0.1 -s rr", zeroPort},
		{"add bare IPv6 without port", "-A -t 2001:db8::1 -s mh", zeroPort},
		{"edit without port", "-E -t 10.0.0.1 -s rr", zeroPort},
		{"bracket without port", "-A -t [2001:db8::1]", "-t [2001:db8::1]: illegal virtual server address[:port]: want [IPv6]:PORT"},
		{"digits only", "-A -t 80", "-t 80: illegal virtual server address[:port]: want an IP address (host names are not looked up)"},
		{"bad real", "-a " + svc + " -r nowhere", "-r nowhere: illegal real server address[:port]: want an IP address (host names are not looked up)"},
		{"real of other family", "-a " + svc + " -r [2001:db8::2]:80", "-r [2001:db8::2]:80: the real server and the virtual service 10.0.0.1:80 are of different address families"},
		{"bad netmask", "-A " + svc + " -p -M 255.0.255.0", "-M 255.0.255.0: illegal virtual server persistent mask: want a netmask like 255.255.255.0"},
		{"IPv6 netmask", "-A -t [2001:db8::1]:80 -p -M 200", "-M 200: illegal ipv6 netmask: want a prefix length from 1 to 128"},
		{"bad laddr", "-P " + svc + " -z nowhere", `-z nowhere: illegal local address: "nowhere" is not an IP address or a range (FIRST-LAST, as 10.0.3.100-149)`},
		{"laddr range backwards", "-P " + svc + " -z 10.0.0.100-99", `-z 10.0.0.100-99: illegal local address: "10.0.0.100-99": the range ends below its first address`},
		{"laddr range end not an octet", "-P " + svc + " -z 10.0.0.100-300", `-z 10.0.0.100-300: illegal local address: "10.0.0.100-300": "300" is not the last octet (0-255) of the range's last address`},
		{"laddr range of other family", "-P " + svc + " -z 2001:db8::100-1ff", "-z 2001:db8::100-1ff: the local address and the service TCP 10.0.0.1:80 are of different address families"},
		{"laddr of other family", "-P " + svc + " -z 2001:db8::fe", "-z 2001:db8::fe: the local address and the service TCP 10.0.0.1:80 are of different address families"},
		{"two commands", "-A -L", "multiple commands specified (add-service and list)"},
		{"two commands combined", "-Ln -C", "multiple commands specified (list and flush)"},
		{"two services", "-A -t 10.0.0.1:80 -u 10.0.0.1:80", "multiple 'service-address' options specified"},
		{"two weights", "-a " + svc + " -r 10.0.1.1 -w 1 -w 2", "multiple 'weight' options specified"},
		{"no service", "-A -s rr", "you need to supply the 'service-address' option for the 'add-service' command"},
		{"no real", "-a " + svc, "you need to supply the 'real-server' option for the 'add-server' command"},
		{"no laddr", "-P " + svc, "you need to supply the 'local-address' option for the 'add-laddr' command"},
		{"weight with -A", "-A " + svc + " -w 3", "illegal 'weight' option with the 'add-service' command"},
		{"scheduler with -D", "-D " + svc + " -s rr", "illegal 'scheduler' option with the 'delete-service' command"},
		{"laddr with -E", "-E " + svc + " -z 10.0.0.254", "illegal 'local-address' option with the 'edit-service' command"},
		{"fullnat with -d", "-d " + svc + " -r 10.0.1.1 -b", "illegal 'forwarding-method' option with the 'delete-server' command"},
		{"numeric with -A", "-A " + svc + " -n", "illegal 'numeric' option with the 'add-service' command"},
		{"stats with -S", "-S --stats", "illegal 'stats' option with the 'save' command"},
		{"service with -C", "-C " + svc, "illegal 'service-address' option with the 'flush' command"},
		{"connection and service", "-L -c " + svc, "the option 'service-address' conflicts with the 'connection' option in the 'list' command"},
		{"timeout and connection", "-L -c --timeout", "the option 'timeout' conflicts with the 'connection' option in the 'list' command"},
		{"connection and stats", "-L -c --stats", "options conflicts in the list command"},
		{"timeout and persistent-conn", "-L --timeout --persistent-conn", "options conflicts in the list command"},
		{"set two values", "--set 1 2", "--set option requires 3 timeout values (tcp tcpfin udp)"},
		{"set four values", "--set 1 2 3 4", "unexpected argument 4"},
		{"set bad value", "--set 1 x 3", "--set x: invalid timeout value: want 0 (unchanged) to 2678400 seconds"},
		{"list extra", "-L foo", "unexpected argument foo"},
		{"unknown long", "-L --bogus", "--bogus: unknown option (see ipvsadm -h)"},
		{"unknown short", "-K", "-K: unknown option (see ipvsadm -h)"},
		{"missing value", "-a " + svc + " -r 10.0.1.1 -w", "-w: missing argument"},
		{"value to a flag", "-L --stats=1", "--stats=1: --stats takes no value"},
		{"no command", "-n", "no command given (try ipvsadm -h)"},
		{"fwmark", "-A -f 1", "-f: xlb has no firewall-mark services: give -t or -u VIP:PORT"},
		{"thresholds", "-a " + svc + " -r 10.0.1.1 -x 100", "-x: xlb has no connection thresholds"},
		{"one-packet", "-A -u 10.0.0.1:53 -o", "-o: xlb has no one-packet scheduling"},
		{"sync daemon", "--start-daemon master", "--start-daemon: xlb has no connection sync daemon"},
		{"sched-flags", "-A " + svc + " --sched-flags sh-port", "--sched-flags: xlb's schedulers take no flags (-b is DPVS's --fullnat here)"},
		{"tunnel", "-a " + svc + " -r 10.0.1.1 --tun-type gue", "--tun-type: xlb forwards in FullNAT only: it has no tunnels"},
		{"snat", "-a " + svc + " -r 10.0.1.1 -J", "-J: xlb forwards in FullNAT only: it has no SNAT mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(strings.Fields(tc.have))
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error %q", tc.have, got, tc.want)
			}
			if !IsUsage(err) || err.Error() != tc.want {
				t.Errorf("Parse(%q) error\n got %q (usage %v)\nwant %q", tc.have, err, IsUsage(err), tc.want)
			}
		})
	}
}

// TestLegalTable checks that every row of the table of legal options has
// one rule per option, of the known kinds.
func TestLegalTable(t *testing.T) {
	for k, row := range legal {
		if len(row) != int(numOpts) || strings.Trim(row, "+x1 ") != "" {
			t.Errorf("%s: row %q: want %d characters of '+', 'x', '1' or ' '", k, row, numOpts)
		}
	}
}

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
