"""The build-it track's reference solutions, sealed the way the course's answers are.

Each reference is the source of a solved exercise module, compressed and base85-encoded,
so reading this file, grepping the package or tab-completing shows no solution. They
open only for a teacher: with ``GEMMA_EXPLORE_TEACHER=1`` (the switch that opens
``ge.answer_key[name]``, :func:`gemma_explore.course.grader.teacher`),
:func:`reference` loads one as a module and :func:`reference_source` returns its text;
``python -m gemma_explore.course.buildit check reference`` runs the learner's checks on
them, and ``reveal DIR`` writes them out. Like the answer key, this is a speed bump, not
a lock: the encoding is standard (zlib, base85), and a learner who decodes it on purpose
has chosen to.

A maintainer who changes a reference edits the revealed file and reseals the folder:
``GEMMA_EXPLORE_TEACHER=1 python -m gemma_explore.course.buildit seal DIR`` prints the
new :data:`SEALED` table to paste here. The tests prove each one passes its checks.

>>> unseal(seal("x = 1\\n"))
'x = 1\\n'
>>> sorted(SEALED) == sorted(TRACK)
True
"""

from __future__ import annotations

import base64
import types
import zlib

from gemma_explore.course.grader import TEACHER_ENV, teacher

__all__ = ["SEALED", "TRACK", "reference", "reference_source", "seal", "unseal"]

# The exercises in the order a learner meets them; each is a module of this folder.
TRACK = ("resize", "audio_slots", "newlines", "raw_audio", "video_stamps")


def seal(source: str) -> str:
    """``source`` compressed and base85-encoded: unreadable at a glance, not secret."""
    return base64.b85encode(zlib.compress(source.encode("utf-8"), 9)).decode("ascii")


def unseal(blob: str) -> str:
    """The source :func:`seal` sealed."""
    return zlib.decompress(base64.b85decode(blob.encode("ascii"))).decode("utf-8")


def reference_source(name: str) -> str:
    """The reference solution of exercise ``name``, as text, for a teacher only."""
    if name not in SEALED:
        raise KeyError(f"No build-it exercise {name!r}; the track is {', '.join(TRACK)}.")
    if not teacher():
        raise PermissionError(
            f"The reference solution of {name!r} is the teacher's ({TEACHER_ENV}=1): write "
            "yours, and the checks tell you where it parts from transformers and vLLM."
        )
    return unseal(SEALED[name])


def reference(name: str) -> types.ModuleType:
    """The reference solution of exercise ``name`` as a module, for a teacher only."""
    module = types.ModuleType(f"gemma_explore.course.buildit.reference.{name}")
    exec(compile(reference_source(name), f"<reference {name}>", "exec"), module.__dict__)  # noqa: S102
    return module


# name → the sealed source of its solved module (made by ``seal``, see the docstring).
SEALED: dict[str, str] = {
    "resize": (
        "c-noFVQ$ng5QYEe6i?z$5``{MgwRUuMG%VI-SNg+#}4)^Tet`Z;$n=)*)5c+`4J`K_dd;gQEZAc#?hYmlxQ5"
        "`<|QVE2_dp!7ej8Ebv7HGnx@&4MWXC}(r9BEA5QxNaXXPaOuU5)JmBp1Jgv|5Twgl8y$7EbPha#%ZeO<z<XQ"
        "~xrU6GvfjsW;{?mY4J=u{j0~MgZDDVa!KVx~^A_hW^mcj8z0WQPf7QcVV?ZL<05zz`wq!mF~sk3<;*LQ)}6|"
        "eNZ|DYmkb{vzOm*6+~TjKU_Utfu$#s+JC8EW>fQ^F)>3E3*Z`WREYLVK)+jVA0mnUn{$onNsj{zaFM;Xs+i`"
        "_G!2%~Pz4zVv61-JTHWJ0(eyvuM{Milp}BY{_tkciU>=$pvIiZmG>HjE(mLOqQO)k7_P!QW-fepQNm&JS}C="
        "fJHZ8cA<S1^^&j_bj>(i0@iBD%Wmho+jH~_&}-Z4=lKshJQbNp{)M2h<_`fG`Z@"
    ),
    "audio_slots": (
        "c-mEx!ES>v5Jd0!ijjK34Jd}BRTL@xk*Y#gSc(;FBikhH-`A{3)p7yD?wi?JdhZO{wx8qdscoUn<a~s()<qS"
        "yvthI8sK+N6qxQB{bEjP!-IZ)8>}=Yg%rsIsLE9)$y&=x&{GLwb^6KNXLAvHZ9nLV?{%tC8ILcN^DS#)$fk0"
        "o;t4nkqSE4CkFA*3psjg#0Ra6Yy?NB#If#>D6w67J>LBY&p)JXxZ=g+GilX|ZVg~g2eDvGtM!b`mu41JZ@qA"
        "rn5z0^&WyK&dHbN7H^Tcb}7Cr=fbX;482!RVVB^<&H|Q~vY&Dg{GV3-`eVLa%*@t3&7jPih3m%*+s%9L{S`o"
        "*;>*O<8zlKdETMiQ~JwRP1#}RfCJOH#g3_z!NT{$0A~fMu601V9H;3ksr2bQW80bW=R3MUu$SgRwXy)<>yu8"
        "kE#6dyTT-$3>tc@kZ$C^afkzxn7|{RAE2a>gL`{SnbnpQa|x%IYdA(BR!sV7Ez?TgW_>&+|M@J%<_9<)-NO"
    ),
    "newlines": (
        "c-noEO>ToQ5QX=gVw7&MnpP#v3WZ*TMhKN5vEtasnC1pOK#$my^bJr_L|RKW<MH$7`JwjiOhr+5q4Qi6q|c4"
        ">fl6y#D1&ykjiQQcI<r4;VfkXT<u=w;o08FO$h8goHH`-;Rr;;>tw|0PJ-l3HX+#(kEe`I)cFt)^?NbU}WB5"
        "wxSC`6q3n;^NqNR*-sGlbH<){tAzaztTd{3oBci7i~f+MdF#~|^)vnPkelue`UVM55zH5m7l%sD7hMdK#dc="
        "yK?DN@g}A)Og&4E7PPu&rWAOf3W;WVD&N*|hvGX^P_yTr#;mqt{mMM!nA_$bW<RjJZV(<FT9hX-~EDbVB7Rh"
        "6*BRwrY3+{{X~8E2Sm!Q>Zm=_dF#)C8b`y+7(KIj~Mjz@j2MoEjX}+Akic<!o;{m7&BTR`XIIogc!dVLiq+_"
        "4ci3"
    ),
    "raw_audio": (
        "c-n=L&2GXl5QOh}ijjI~B8UiqQYk9E_Ax9g-hhSeP5lE>pT02xHMjcW-PLIJ^LX%VA;gek@+1Vb9oa`n=Qzr"
        "!*@dD|G$1)WXi`EZrCCJ2kPD?tRs?BBL!pCqu|oZs@2<dfJWZYsby+WT*lcjvHx=-Lp0w!@&jcewTw|0zYH8"
        "s41|9H2p6gL6MGBE2^Sqd8uEtpLL>i6k>C8rv{|{;K(oPIVEOl66*ESifMU67oD{QMOPqv49lWD)mT8aH@Kp"
        "?AonZkr>$vjN&{(5+>_&B1OcP^r6W(f9}f_CuIov3W9F5AZ&BSfzi)h&8<S2k(R|7r3E|EN}X;9WJNPngTtt"
        "#%LH8t-p&;5q8ib59|#pB^%QW}t6j$erT3_yzaxqV)"
    ),
    "video_stamps": (
        "c-m!A?P|j?4E&#`5E+A}Y;7rHKLXn$>;+0OUac^9jbtom6tcYg6q|Nm`Qg|)-<?kGBKKfSH>4q=G2r{aF@Yu"
        "GWRqu-s&d!?o`WT4KD<L-RG?oMZI8y2^9Pg`PF~W^Q`+AZG-$0mu}$y^FHBg<iQkdL1dJy0TTn`YmgV=#z6D"
        "9KoU-4KGhWdK?w{vfd$EHj*gk;o^4?1}1w0An0^9&`=^3I;YMkB>LS$`TID!=!dK8t&dXj9PC3pLxuU9lGo^"
        "}0`JmZ;z2PQX@%FXp`{EcSCl??&OExLNt;EM}oy@tn4({8qIYJUN@*LvN|8B!eRpzXV?8&O}4poV&NWKXlIO"
        "fc#Qr!h|smj5O`jXJ}r&WU7BQyOckFU0z!j{"
    ),
}
