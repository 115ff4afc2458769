"""The stages of grading one lab, in order: build -> check -> test -> sanitize -> time -> score.

Each stage is a function of (context, lab result): the context (context.LabContext) holds
what the stage may read (the run's options and plan, the kit's build, the submission's
files and build, the lab's manifest), the result (outcome.LabResult) what it found. A
stage that ends the lab sets the result's status; grade.py runs the next stage only while
the result says so.
"""
