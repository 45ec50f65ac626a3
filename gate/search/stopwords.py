"""Words too common to say what a search is about, in English and Portuguese, folded the way the
index folds them (lower case, no accents). A query made only of such words keeps them all, so
that searching for "OS" or "it" still means something."""

ENGLISH = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else ever every few for from further get gets got had hadn has
    hasn have haven having he her here hers herself him himself his how however i if in into is
    isn it its itself just let ll me might more most must mustn my myself no nor not now of off
    on once only or other ought our ours ourselves out over own please re same shall shan she
    should shouldn so some such than that the their theirs them themselves then there these they
    this those through to too under until up upon us ve very via was wasn we were weren what when
    where whether which while who whom whose why will with won would wouldn yet you your yours
    yourself yourselves s t d m
    """.split()
)

PORTUGUESE = frozenset(
    """
    a ao aos aquela aquelas aquele aqueles aquilo as ate com como contra cujo cuja da das de dela
    delas dele deles depois desde dessa dessas desse desses desta destas deste destes do dos e ela
    elas ele eles em entre era eram essa essas esse esses esta estao estas estava estavam este
    estes estou eu foi foram ha isso isto ja lhe lhes mais mas me mesmo meu meus minha minhas
    muito na nao nas nem no nos nossa nossas nosso nossos num numa o os ou para pela pelas pelo
    pelos por porque pra qual quais quando que quem se sem ser seu seus so sua suas tambem te tem
    tinha tinham um uma umas uns voce voces vos
    """.split()
)

ALL = ENGLISH | PORTUGUESE
