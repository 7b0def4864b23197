// SPDX-License-Identifier: Apache-2.0

package ipvsadm

// Kind is the command an ipvsadm command line runs.
type Kind int

// The commands, in ipvsadm's order, then DPVS's local-address commands.
const (
	None          Kind = iota
	AddService         // -A
	EditService        // -E
	DeleteService      // -D
	Clear              // -C
	List               // -L, -l
	AddReal            // -a
	DeleteReal         // -d
	EditReal           // -e
	SetTimeouts        // --set
	Restore            // -R
	Save               // -S
	Zero               // -Z
	AddLaddr           // -P (DPVS)
	DelLaddr           // -Q (DPVS)
	GetLaddr           // -G (DPVS)
	Help               // -h
	Version            // -v
)

// kindNames are ipvsadm's names of the commands, used in its messages.
var kindNames = [...]string{
	None: "none", AddService: "add-service", EditService: "edit-service", DeleteService: "delete-service",
	Clear: "flush", List: "list", AddReal: "add-server", DeleteReal: "delete-server", EditReal: "edit-server",
	SetTimeouts: "set", Restore: "restore", Save: "save", Zero: "zero",
	AddLaddr: "add-laddr", DelLaddr: "del-laddr", GetLaddr: "get-laddr", Help: "help", Version: "version",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// optID names an option that commands take (ipvsadm's OPT_ bits).
type optID int

const (
	optNumeric optID = iota
	optConnection
	optService
	optScheduler
	optPersistent
	optNetmask
	optReal
	optForward
	optWeight
	optTimeout
	optDaemon
	optStats
	optRate
	optThresholds
	optPersistentConn
	optNoSort
	optExact
	optLaddr
	optIfname
	numOpts
)

// optNames are ipvsadm's (and DPVS's) names of the options, used in its
// messages.
var optNames = [numOpts]string{
	"numeric", "connection", "service-address", "scheduler", "persistent", "netmask", "real-server",
	"forwarding-method", "weight", "timeout", "daemon", "stats", "rate", "thresholds", "persistent-conn",
	"nosort", "exact", "local-address", "ifname",
}

// legal is ipvsadm's table of legal combinations of commands and
// options, one character per option in optID order: '+' compulsory,
// 'x' illegal, '1' exclusive (one '1' option at most), ' ' optional.
// Rows are ipvsadm 1.31's, cut to the options xlb has, and DPVS's for
// the local-address commands; -A also takes -z (an xlb extension) and
// -P/-Q take -F without needing it.
var legal = map[Kind]string{
	//              ncsspMrfwtdsrtpsel i
	AddService:    "xx+   xxxxxxxxxxx x",
	EditService:   "xx+   xxxxxxxxxxxxx",
	DeleteService: "xx+xxxxxxxxxxxxxxxx",
	Clear:         "xxxxxxxxxxxxxxxxxxx",
	List:          " 11xxxxxx11      xx",
	AddReal:       "xx+xxx+  xxxxxxxxxx",
	DeleteReal:    "xx+xxx+xxxxxxxxxxxx",
	EditReal:      "xx+xxx+  xxxxxxxxxx",
	SetTimeouts:   "xxxxxxxxxxxxxxxxxxx",
	Restore:       "xxxxxxxxxxxxxxxxxxx",
	Save:          " xxxxxxxxxxxxxxxxxx",
	Zero:          "xx xxxxxxxxxxxxxxxx",
	AddLaddr:      "xx+xxxxxxxxxxxxxx+ ",
	DelLaddr:      "xx+xxxxxxxxxxxxxx+ ",
	GetLaddr:      " x xxxxxxxxxxxxxxxx",
}

// argKind says whether an option takes a value.
type argKind int

const (
	noArg argKind = iota
	needArg
	optionalArg // ipvsadm's -p [timeout]
)

// optSpec is one option ipvsadm knows: its long and short names, whether
// it takes a value, and, for those xlb refuses, why.
type optSpec struct {
	long    string
	short   byte
	arg     argKind
	refused string
}

// Why xlb refuses some of ipvsadm's and DPVS's options.
const (
	noFwmark     = "xlb has no firewall-mark services: give -t or -u VIP:PORT"
	noThresholds = "xlb has no connection thresholds"
	noSync       = "xlb has no connection sync daemon"
	noTunnel     = "xlb forwards in FullNAT only: it has no tunnels"
	dpvsOnly     = "this DPVS feature is not in xlb"
)

// specs are the options, by their long names.
var specs = []optSpec{
	{long: "add-service", short: 'A'},
	{long: "edit-service", short: 'E'},
	{long: "delete-service", short: 'D'},
	{long: "clear", short: 'C'},
	{long: "list", short: 'L'},
	{long: "list", short: 'l'},
	{long: "zero", short: 'Z'},
	{long: "add-server", short: 'a'},
	{long: "edit-server", short: 'e'},
	{long: "delete-server", short: 'd'},
	{long: "set"},
	{long: "help", short: 'h'},
	{long: "version", short: 'v'},
	{long: "restore", short: 'R'},
	{long: "save", short: 'S'},
	{long: "add-laddr", short: 'P'},
	{long: "del-laddr", short: 'Q'},
	{long: "get-laddr", short: 'G'},
	{long: "tcp-service", short: 't', arg: needArg},
	{long: "udp-service", short: 'u', arg: needArg},
	{long: "scheduler", short: 's', arg: needArg},
	{long: "persistent", short: 'p', arg: optionalArg},
	{long: "netmask", short: 'M', arg: needArg},
	{long: "real-server", short: 'r', arg: needArg},
	{long: "masquerading", short: 'm'},
	{long: "ipip", short: 'i'},
	{long: "gatewaying", short: 'g'},
	{long: "fullnat", short: 'b'},
	{long: "weight", short: 'w', arg: needArg},
	{long: "numeric", short: 'n'},
	{long: "connection", short: 'c'},
	{long: "timeout"},
	{long: "daemon"},
	{long: "stats"},
	{long: "rate"},
	{long: "thresholds"},
	{long: "persistent-conn"},
	{long: "nosort"},
	{long: "sort"},
	{long: "exact", short: 'X'},
	{long: "laddr", short: 'z', arg: needArg},
	{long: "ifname", short: 'F', arg: needArg},

	{long: "fwmark-service", short: 'f', arg: needArg, refused: noFwmark},
	{long: "ipv6", short: '6', refused: noFwmark},
	{long: "u-threshold", short: 'x', arg: needArg, refused: noThresholds},
	{long: "l-threshold", short: 'y', arg: needArg, refused: noThresholds},
	{long: "ops", short: 'o', refused: "xlb has no one-packet scheduling"},
	{long: "pe", arg: needArg, refused: "xlb has no persistence engines"},
	{long: "sched-flags", arg: needArg, refused: "xlb's schedulers take no flags (-b is DPVS's --fullnat here)"},
	{long: "start-daemon", arg: needArg, refused: noSync},
	{long: "stop-daemon", arg: needArg, refused: noSync},
	{long: "mcast-interface", arg: needArg, refused: noSync},
	{long: "syncid", arg: needArg, refused: noSync},
	{long: "mcast-group", arg: needArg, refused: noSync},
	{long: "mcast-port", arg: needArg, refused: noSync},
	{long: "mcast-ttl", arg: needArg, refused: noSync},
	{long: "sync-maxlen", arg: needArg, refused: noSync},
	{long: "tun-type", arg: needArg, refused: noTunnel},
	{long: "tun-port", arg: needArg, refused: noTunnel},
	{long: "tun-nocsum", refused: noTunnel},
	{long: "tun-csum", refused: noTunnel},
	{long: "tun-remcsum", refused: noTunnel},
	{long: "tun-info", refused: noTunnel},
	{long: "icmp-service", short: 'q', arg: needArg, refused: "xlb balances TCP and UDP only"},
	{long: "snat", short: 'J', refused: "xlb forwards in FullNAT only: it has no SNAT mode"},
	{long: "synproxy", short: 'j', arg: needArg, refused: dpvsOnly},
	{long: "add-blklst", short: 'U', refused: dpvsOnly},
	{long: "del-blklst", short: 'V', refused: dpvsOnly},
	{long: "get-blklst", short: 'B', refused: dpvsOnly},
	{long: "blklst", short: 'k', arg: needArg, refused: dpvsOnly},
	{long: "match", short: 'H', arg: needArg, refused: dpvsOnly},
	{long: "hash-target", short: 'Y', arg: needArg, refused: dpvsOnly},
	{long: "sockpair", arg: needArg, refused: dpvsOnly},
}

// commandOf maps the options that are commands to their Kind.
var commandOf = map[string]Kind{
	"add-service": AddService, "edit-service": EditService, "delete-service": DeleteService,
	"clear": Clear, "list": List, "zero": Zero, "add-server": AddReal, "edit-server": EditReal,
	"delete-server": DeleteReal, "set": SetTimeouts, "help": Help, "version": Version,
	"restore": Restore, "save": Save, "add-laddr": AddLaddr, "del-laddr": DelLaddr, "get-laddr": GetLaddr,
}

// flagOf maps the options that only set a flag of the command to their
// optID.
var flagOf = map[string]optID{
	"numeric": optNumeric, "connection": optConnection, "timeout": optTimeout, "daemon": optDaemon,
	"stats": optStats, "rate": optRate, "thresholds": optThresholds, "persistent-conn": optPersistentConn,
	"nosort": optNoSort, "exact": optExact,
}

func specByLong(name string) (optSpec, bool) {
	for _, s := range specs {
		if s.long == name {
			return s, true
		}
	}
	return optSpec{}, false
}

func specByShort(c byte) (optSpec, bool) {
	for _, s := range specs {
		if s.short == c {
			return s, true
		}
	}
	return optSpec{}, false
}
