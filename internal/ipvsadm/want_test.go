// SPDX-License-Identifier: Apache-2.0

package ipvsadm

// The expected listings of format_test.go: ipvsadm 1.31's printf formats
// applied by hand to the fixture (an independent rendering, not this
// package's output), with DPVS's FullNat and -G layouts.

// wantPlain is ipvsadm's output for the fixture, from its printf formats.
var wantPlain = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port Scheduler Flags\n" +
	"  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n" +
	"TCP  10.0.0.1:80 rr persistent 300 mask 255.255.255.0\n" +
	"  -> 10.0.1.1:8080                FullNat 1      1          0         \n" +
	"  -> 10.0.1.2:8080                FullNat 2      3          4         \n" +
	"UDP  10.0.0.1:53 sh\n" +
	"  -> 10.0.1.2:53                  FullNat 1      0          0         \n" +
	"TCP  [2001:db8::1]:443 wrr persistent 600 mask 64\n" +
	"  -> [2001:db8::2]:443            FullNat 1      0          0         \n"

// wantStats is ipvsadm's output for the fixture, from its printf formats.
var wantStats = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n" +
	"  -> RemoteAddress:Port\n" +
	"TCP  10.0.0.1:80                        12       72       48     4608     7296\n" +
	"  -> 10.0.1.1:8080                99999999  100000K  999999K    1000M     123T\n" +
	"  -> 10.0.1.2:8080                       0        0        0   99999M     100G\n" +
	"UDP  10.0.0.1:53                         0        0        0        0        0\n" +
	"  -> 10.0.1.2:53                         0        0        0        0        0\n" +
	"TCP  [2001:db8::1]:443                   1        2        3        4        5\n" +
	"  -> [2001:db8::2]:443                   1        2        3        4        5\n"

// wantExact is ipvsadm's output for the fixture, from its printf formats.
var wantExact = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes\n" +
	"  -> RemoteAddress:Port\n" +
	"TCP  10.0.0.1:80                        12       72       48     4608     7296\n" +
	"  -> 10.0.1.1:8080                99999999 100000000 999999999 1000000000 123456789012345\n" +
	"  -> 10.0.1.2:8080                       0        0        0 99999999999 100000000000\n" +
	"UDP  10.0.0.1:53                         0        0        0        0        0\n" +
	"  -> 10.0.1.2:53                         0        0        0        0        0\n" +
	"TCP  [2001:db8::1]:443                   1        2        3        4        5\n" +
	"  -> [2001:db8::2]:443                   1        2        3        4        5\n"

// wantRate is ipvsadm's output for the fixture, from its printf formats.
var wantRate = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS\n" +
	"  -> RemoteAddress:Port\n" +
	"TCP  10.0.0.1:80                        12       72       48     4608     7296\n" +
	"  -> 10.0.1.1:8080                99999999 100000000 999999999    1000M     123T\n" +
	"  -> 10.0.1.2:8080                       0        0        0   99999M     100G\n" +
	"UDP  10.0.0.1:53                         0        0        0        0        0\n" +
	"  -> 10.0.1.2:53                         0        0        0        0        0\n" +
	"TCP  [2001:db8::1]:443                   1        2        3        4        5\n" +
	"  -> [2001:db8::2]:443                   1        2        3        4        5\n"

// wantThresholds is ipvsadm's output for the fixture, from its printf formats.
var wantThresholds = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn \n" +
	"  -> RemoteAddress:Port\n" +
	"TCP  10.0.0.1:80 rr persistent 300 mask 255.255.255.0\n" +
	"  -> 10.0.1.1:8080                0          0          1          0         \n" +
	"  -> 10.0.1.2:8080                0          0          3          4         \n" +
	"UDP  10.0.0.1:53 sh\n" +
	"  -> 10.0.1.2:53                  0          0          0          0         \n" +
	"TCP  [2001:db8::1]:443 wrr persistent 600 mask 64\n" +
	"  -> [2001:db8::2]:443            0          0          0          0         \n"

// wantPconn is ipvsadm's output for the fixture, from its printf formats.
var wantPconn = "" +
	"xlb version v1.2.3 (FullNAT)\n" +
	"Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn \n" +
	"  -> RemoteAddress:Port\n" +
	"TCP  10.0.0.1:80 rr persistent 300 mask 255.255.255.0\n" +
	"  -> 10.0.1.1:8080                1         0           1          0         \n" +
	"  -> 10.0.1.2:8080                2         0           3          4         \n" +
	"UDP  10.0.0.1:53 sh\n" +
	"  -> 10.0.1.2:53                  1         0           0          0         \n" +
	"TCP  [2001:db8::1]:443 wrr persistent 600 mask 64\n" +
	"  -> [2001:db8::2]:443            1         0           0          0         \n"

// wantRules is ipvsadm's output for the fixture, from its printf formats.
var wantRules = "" +
	"-A -t 10.0.0.1:80 -s rr -p 300 -M 255.255.255.0\n" +
	"-P -t 10.0.0.1:80 -z 10.0.0.254\n" +
	"-P -t 10.0.0.1:80 -z 10.0.0.253\n" +
	"-a -t 10.0.0.1:80 -r 10.0.1.1:8080 -b -w 1\n" +
	"-a -t 10.0.0.1:80 -r 10.0.1.2:8080 -b -w 2\n" +
	"-A -u 10.0.0.1:53 -s sh\n" +
	"-P -u 10.0.0.1:53 -z 10.0.0.254\n" +
	"-a -u 10.0.0.1:53 -r 10.0.1.2:53 -b -w 1\n" +
	"-A -t [2001:db8::1]:443 -s wrr -p 600 -M 64\n" +
	"-P -t [2001:db8::1]:443 -z 2001:db8::fe\n" +
	"-a -t [2001:db8::1]:443 -r [2001:db8::2]:443 -b -w 1\n"

// wantLaddrs is ipvsadm's output for the fixture, from its printf formats.
var wantLaddrs = "" +
	"VIP:VPORT            TOTAL    SNAT_IP              CONFLICTS  CONNS     \n" +
	"10.0.0.1:80          2        \n" +
	"                              10.0.0.254           0          0         \n" +
	"                              10.0.0.253           0          0         \n" +
	"10.0.0.1:53          1        \n" +
	"                              10.0.0.254           0          0         \n" +
	"[2001:db8::1]:443    1        \n" +
	"                              2001:db8::fe         0          0         \n"

// wantConns is ipvsadm's output for the fixture, from its printf formats.
var wantConns = "" +
	"IPVS connection entries\n" +
	"pro expire state       source             virtual            destination\n" +
	"TCP 14:58  ESTABLISHED 203.0.113.7:5000   10.0.0.1:80        10.0.1.1:8080\n" +
	"UDP 00:00  UDP         203.0.113.8:5353   10.0.0.1:53        10.0.1.2:53\n" +
	"TCP 00:59  SYN_SENT    [2001:db8::99]:40000 [2001:db8::1]:443  [2001:db8::2]:443\n" +
	"TCP 02:00  FIN_WAIT    203.0.113.9:6000   10.0.0.1:80        0.0.0.0:0\n"

// wantConnspc is ipvsadm's output for the fixture, from its printf formats.
var wantConnspc = "" +
	"IPVS connection entries\n" +
	"pro expire state       source             virtual            destination        pe name          pe_data\n" +
	"TCP 14:58  ESTABLISHED 203.0.113.7:5000   10.0.0.1:80        10.0.1.1:8080\n" +
	"UDP 00:00  UDP         203.0.113.8:5353   10.0.0.1:53        10.0.1.2:53\n" +
	"TCP 00:59  SYN_SENT    [2001:db8::99]:40000 [2001:db8::1]:443  [2001:db8::2]:443\n" +
	"TCP 02:00  FIN_WAIT    203.0.113.9:6000   10.0.0.1:80        0.0.0.0:0\n"
