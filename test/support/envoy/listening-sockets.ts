/**
 * Which of a process's open sockets are listening, read from /proc: the socket inodes behind
 * /proc/PID/fd, matched against the listening entries of the process's own network namespace
 * (/proc/PID/net/{tcp,tcp6,udp,udp6,unix}).
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface ListeningSocket {
  table: string;
  inode: string;
}

const TCP_LISTEN = '0A';
/** An unconnected UDP socket receives from anyone: for our purpose it listens. */
const UDP_UNCONNECTED = '07';
/** __SO_ACCEPTCON in /proc/net/unix Flags: the socket has called listen(). */
const UNIX_ACCEPTCON = 0x10000;

export function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1] as string);
    } catch {
      // The descriptor closed between readdir and readlink.
    }
  }
  return inodes;
}

function listeningInodes(pid: number): ListeningSocket[] {
  const found: ListeningSocket[] = [];
  for (const table of ['tcp', 'tcp6', 'udp', 'udp6']) {
    const wanted = table.startsWith('tcp') ? TCP_LISTEN : UDP_UNCONNECTED;
    for (const line of readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields[3] === wanted) found.push({ table, inode: fields[9] as string });
    }
  }
  for (const line of readFileSync(`/proc/${pid}/net/unix`, 'utf8').trim().split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (parseInt(fields[3] as string, 16) & UNIX_ACCEPTCON) found.push({ table: 'unix', inode: fields[6] as string });
  }
  return found;
}

/** The listening sockets process `pid` holds right now. */
export function listeningSocketsOf(pid: number): ListeningSocket[] {
  const own = socketInodes(pid);
  return listeningInodes(pid).filter((socket) => own.has(socket.inode));
}
