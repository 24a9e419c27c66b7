import unittest

from stats import mean, median, word_lengths


class StatsTest(unittest.TestCase):
    def test_word_lengths_ignore_punctuation(self):
        self.assertEqual(word_lengths("a bb, ccc."), [1, 2, 3])

    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 6]), 3)

    def test_median_of_odd_count(self):
        self.assertEqual(median([5, 1, 3]), 3)

    def test_median_of_even_count(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)


if __name__ == "__main__":
    unittest.main()
