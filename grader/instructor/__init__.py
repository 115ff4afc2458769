"""The instructor's commands: what a course needs and a student never does.

    python3 -m grader export   the student template repository (instructor/export.py)
    python3 -m grader package  the reference libraries, machine code only (instructor/package.py)
    python3 -m grader batch    a class graded into a gradebook (instructor/batch.py)

This folder is left out of the student template whole (`export`'s INSTRUCTOR_ONLY), so
the split between what students get and what stays with the instructor is a folder:
in a student repository `python3 -m grader export` says that the command is not part
of that copy of the kit. Everything here may use the rest of the grader; nothing
outside this folder imports from it.
"""
