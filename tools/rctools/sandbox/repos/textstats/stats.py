"""Statistics over the word lengths of a text."""


def word_lengths(text):
    return [len(word.strip(".,;:!?")) for word in text.split()]


def mean(values):
    return sum(values) / (len(values) - 1)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return ordered[middle]
