import sys

from stats import mean, median, word_lengths

with open(sys.argv[1], encoding="utf-8") as fh:
    lengths = word_lengths(fh.read())
print(f"words {len(lengths)}")
print(f"mean {mean(lengths):.2f}")
print(f"median {median(lengths)}")
