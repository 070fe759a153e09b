/**
 * Which IP addresses are internal: the ranges a remote agent's URL must not
 * reach unless the operator names the address itself (allowlist.ts). Checked
 * on every address a host resolves to, before any connection (src/a2a/guardedFetch.ts).
 */
import { BlockList, isIPv4, isIPv6 } from "node:net";

/** Internal IPv4 ranges, each with the name a log line gives it. */
const IPV4_RANGES: readonly [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "carrier-grade NAT"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "IETF protocol assignments"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

/** Internal IPv6 ranges (IPv4-mapped and NAT64 addresses are judged by the IPv4 address they carry). */
const IPV6_RANGES: readonly [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["::", 96, "IPv4-compatible"],
  ["fc00::", 7, "unique local (private)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

const lists = new Map<string, BlockList>();
for (const [network, prefix, name] of IPV4_RANGES) listOf(name).addSubnet(network, prefix, "ipv4");
for (const [network, prefix, name] of IPV6_RANGES) listOf(name).addSubnet(network, prefix, "ipv6");

function listOf(name: string): BlockList {
  let list = lists.get(name);
  if (!list) {
    list = new BlockList();
    lists.set(name, list);
  }
  return list;
}

/** The IPv4 address an IPv4-mapped (`::ffff:a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`) IPv6 address carries. */
function embeddedIPv4(address: string): string | null {
  const match = /^(?:::ffff:(?:0:)?|64:ff9b::)(.+)$/i.exec(address);
  if (!match?.[1]) return null;
  const tail = match[1];
  if (isIPv4(tail)) return tail;
  const words = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(tail);
  if (!words) return null;
  const high = Number.parseInt(words[1]!, 16);
  const low = Number.parseInt(words[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/**
 * The internal range `address` is in (`loopback`, `private`, `link-local`,
 * `carrier-grade NAT`, `unspecified`…), or null for a public address. Anything
 * that is not an IP address counts as internal (`not an IP address`).
 */
export function internalRange(address: string): string | null {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (isIPv6(bare)) {
    const carried = embeddedIPv4(bare);
    if (carried !== null) return internalRange(carried);
    for (const [name, list] of lists) if (list.check(bare, "ipv6")) return name;
    return null;
  }
  if (isIPv4(bare)) {
    for (const [name, list] of lists) if (list.check(bare, "ipv4")) return name;
    return null;
  }
  return "not an IP address";
}

/** Whether `address` is a loopback address (127.0.0.0/8, ::1, or an IPv6 address carrying one). */
export const isLoopback = (address: string): boolean => internalRange(address) === "loopback";
