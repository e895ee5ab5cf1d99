# work.py: a CPython workload (sorting, dict and string work in the
# interpreter) for the stack fidelity test. Usage: python3.11 work.py SECONDS
import sys
import time


def words(n, seed):
    out = []
    for i in range(n):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        out.append("prefix-%d-%x" % (seed % 1000, seed))
    return out


def count(ws):
    d = {}
    for w in ws:
        k = w[7:10]
        d[k] = d.get(k, 0) + 1
    return sum(d.values())


def main():
    end = time.monotonic() + (float(sys.argv[1]) if len(sys.argv) > 1 else 0.3)
    seed, total = 1, 0
    while time.monotonic() < end:
        ws = words(5000, seed)
        ws.sort(key=lambda w: (len(w), w))
        total += count(ws)
        seed += 1
    return total


main()
