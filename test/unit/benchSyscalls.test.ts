import assert from 'node:assert/strict';
import { countSyscalls } from '../../scripts/bench/syscalls';

// Two calls as `strace -f -p <runner>` writes them: the runner (10), the child that waited when
// the trace began (11, seen from its wake-up), the one forked ahead after the first call (12,
// which runs the second) and the one forked after the second (13, still waiting).
const TRACE = [
  '10 read(3, "CXr\\0\\0\\0\\0\\1\\0\\0\\0Fdir=/sandbox/runs/00"..., 65536) = 82',
  '10 mkdir("/sandbox/runs/0001-aaaaaa", 0700) = 0',
  '10 write(14, "/sandbox/runs/0001-aaaaaa\\n", 26 <unfinished ...>',
  '11 <... read resumed>"/sandbox/runs/0001-aaaaaa\\n", 4096) = 26',
  '10 <... write resumed>) = 26',
  '11 chdir("/sandbox/runs/0001-aaaaaa") = 0',
  '11 write(1, "1", 1) = 1',
  '10 read(9, "1", 65536) = 1',
  '11 exit_group(0) = ?',
  '11 +++ exited with 0 +++',
  '10 --- SIGCHLD {si_signo=SIGCHLD} ---',
  '10 write(4, "CXX\\0\\0\\0\\0\\1\\0\\0\\0h{\\"t\\":\\"exit\\""..., 116) = 116',
  '10 clone(child_stack=NULL, flags=SIGCHLD) = 12',
  '12 set_robust_list(0x7f, 24) = 0',
  '12 read(13,  <unfinished ...>',
  '10 poll([{fd=3, events=POLLIN}], 1, -1) = 1',
  '10 read(3, "CXr\\0\\0\\0\\0\\2\\0\\0\\0Fdir=/sandbox/runs/00"..., 65536) = 82',
  '10 write(14, "/sandbox/runs/0002-bbbbbb\\n", 26) = 26',
  '12 <... read resumed>"/sandbox/runs/0002-bbbbbb\\n", 4096) = 26',
  '12 close(13) = 0',
  '12 chdir("/sandbox/runs/0002-bbbbbb") = 0',
  '12 exit_group(0) = ?',
  '10 write(4, "CXX\\0\\0\\0\\0\\2\\0\\0\\0h{\\"t\\":\\"exit\\""..., 116) = 116',
  '10 clone(child_stack=NULL, flags=SIGCHLD) = 13',
  '13 set_robust_list(0x7f, 24) = 0',
  '13 read(13,  <unfinished ...>',
  '',
].join('\n');

describe('bench: syscalls per warm call, from a trace', () => {
  it('counts the runner from a request to its exit frame and the program from its wake-up to its exit', () => {
    assert.deepEqual(countSyscalls(TRACE, 10, 2), {
      calls: 2,
      // The first call's way is 5 (read, mkdir, write, read, write); the second's 3: the median of two is the larger.
      runner: { onTheWay: 5, all: 5.5 },
      // The way: 3 (chdir, write, exit_group) and 3 (close, chdir, exit_group); in all, 3 + 5 + 2
      // first lines of three children (a resumed read is not a syscall of its own).
      program: { onTheWay: 3, all: 5 },
    });
  });

  it('says nothing on the way of a trace without a call', () => {
    const none = countSyscalls('10 poll([{fd=3, events=POLLIN}], 1, -1) = 1\n', 10, 1);
    assert.deepEqual(none, { calls: 1, runner: { onTheWay: NaN, all: 1 }, program: { onTheWay: NaN, all: 0 } });
  });
});
