"""The course: the notebooks' explorers and exercises, and the grader that checks a learner's answer."""
