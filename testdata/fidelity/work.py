# work.py: a CPython workload (sorting, dict and string work in the
# interpreter) for the stack fidelity test. Usage: python3.11 work.py ROUNDS
# (a fixed amount of work, so a busy machine still gives as many samples)
import sys


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
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    seed, total = 1, 0
    for _ in range(rounds):
        ws = words(5000, seed)
        ws.sort(key=lambda w: (len(w), w))
        total += count(ws)
        seed += 1
    return total


main()
