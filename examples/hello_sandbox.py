# A first program for the sandbox: it computes something, then shows where it ran.
import os
import platform
import socket
import statistics

primes = [n for n in range(2, 200) if all(n % d for d in range(2, int(n ** 0.5) + 1))]
print(f"{len(primes)} primes below 200; the last five: {primes[-5:]}")
print(f"mean gap between them: {statistics.mean(b - a for a, b in zip(primes, primes[1:])):.2f}")

print(f"Python {platform.python_version()} as uid {os.getuid()} in {os.getcwd()}")
try:
    socket.create_connection(("example.com", 443), timeout=3)
    print("network: reachable (unexpected!)")
except OSError as e:
    print(f"network: unreachable ({type(e).__name__})")
try:
    open("/etc/hostname-test", "w")
    print("root filesystem: writable (unexpected!)")
except OSError:
    # The reason differs between runtimes (runc: read-only file system; gVisor checks permissions first).
    print("root filesystem: not writable")
