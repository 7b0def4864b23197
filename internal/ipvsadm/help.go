// SPDX-License-Identifier: Apache-2.0

package ipvsadm

import "strings"

// usage is ipvsadm -h's text; PROG is the program's name.
const usage = `PROG: ipvsadm 1.31 command lines for xlb (FullNAT, DPVS style)
Usage:
  PROG -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] [-z local-address]
  PROG -D virtual-service
  PROG -C
  PROG -R
  PROG -S [-n]
  PROG -a|e virtual-service -r server-address [-b] [-w weight]
  PROG -d virtual-service -r server-address
  PROG -P|Q virtual-service -z local-address [-F ifname]
  PROG -G [virtual-service]
  PROG -L|l [virtual-service] [options]
  PROG -Z [virtual-service]
  PROG --set tcp tcpfin udp
  PROG -h

Commands:
Either long or short options are allowed.
  --add-service     -A        add virtual service with options
  --edit-service    -E        edit virtual service with options: sets the
                              scheduler, persistence and netmask at once,
                              as ipvsadm does (left out: wlc, none, /32)
  --delete-service  -D        delete virtual service
  --clear           -C        clear the whole table
  --restore         -R        restore rules from stdin, all in one apply
  --save            -S        save rules to stdout
  --add-server      -a        add real server with options
  --edit-server     -e        edit real server with options
  --delete-server   -d        delete real server
  --add-laddr       -P        add local address (DPVS)
  --del-laddr       -Q        del local address (DPVS)
  --get-laddr       -G        get local address (DPVS)
  --list            -L|-l     list the table
  --zero            -Z        zero counters in a service or all services
  --set tcp tcpfin udp        set connection timeout values (0: unchanged)
  --help            -h        display this help message
  --version         -v        display the version

virtual-service:
  --tcp-service  -t service-address   service-address is IP[:port] or [IPv6]:port
  --udp-service  -u service-address   service-address is IP[:port] or [IPv6]:port

Options:
  --scheduler    -s scheduler         one of rr|wrr|lc|wlc|sh|mh,
                                      the default scheduler is wlc.
  --persistent   -p [timeout]         persistent service (default 300 s)
  --netmask      -M netmask           persistent granularity mask
  --real-server  -r server-address    server-address is IP[:port]; the port
                                      defaults to the service's
  --fullnat      -b                   fullnat mode (the default and only one)
  --weight       -w weight            capacity of real server (0 to 65535)
  --laddr        -z local-address     FullNAT local (source) address or range (10.0.3.100-149)
  --ifname       -F ifname            accepted and ignored: xlb picks the
                                      interface
  --numeric      -n                   numeric output (always: xlb looks up
                                      no names, with or without -n)
  --connection   -c                   output of current connections
  --timeout                           output of timeout (tcp tcpfin udp)
  --daemon                            output of daemon information (none)
  --stats                             output of statistics information
  --rate                              output of rate information (over 1 s)
  --exact        -X                   expand numbers (display exact values)
  --thresholds                        output of thresholds information
  --persistent-conn                   output of persistent connection info
  --nosort                            disable sorting output of service/server entries
  --sort                              does nothing, for backwards compatibility

Refused, with a message saying why: -g, -m, -i (xlb forwards in FullNAT
only: use -b or leave the method out), -f and -6 (firewall marks), -x and
-y (thresholds), -o, --pe, --sched-flags, the sync daemon and tunnel
options, and DPVS's -J, -q, -j, -H, -Y, -U, -V, -B, -k and --sockpair.
Host and service names are not looked up: give IP addresses and port
numbers.

The daemon is found at $XLB_SOCKET, else /run/xlb/xlb.sock. Exit status:
0 success, 2 a command line refused before anything is sent, 1 the daemon
refused the command or could not be reached (nothing changed then).
`

// Usage returns ipvsadm -h's text for the program named prog.
func Usage(prog string) string {
	return strings.ReplaceAll(usage, "PROG", prog)
}
