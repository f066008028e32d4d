"""Our own word list for RULER's word keys and values: an adjective and a noun joined by a hyphen
('brave-lantern'), the shape RULER picks from its word list (wonderwords' adjective and noun lists). The words are
ours, common and unambiguous, so the spelling of a key differs from RULER's while its form and token cost do not."""

from __future__ import annotations

_ADJECTIVE_TEXT = """
    able absent acidic active agile amber ancient angry arctic ashen awake bitter blank bold brave breezy brief bright
    brisk broad bronze calm careful cheap chilly clever cloudy coastal cold cosmic crisp crooked curious damp dapper
    dark dense distant dizzy dusty eager early earnest empty faint fancy fearless feeble fierce flat fluffy foggy fond
    frosty gentle giant glad golden grand grassy greedy grumpy hasty hollow honest humble icy idle jolly keen lanky
    lazy little lively lofty loud loyal lucky lunar mellow merry mighty misty modest muddy narrow neat nimble noble
    noisy odd orange pale patient plain polite proud quick quiet rapid rare rosy rough royal rusty sandy scarlet
    shaggy shiny silent silver sleepy slim smoky smooth snowy solar sour spicy steady stormy sturdy sunny swift tame
    tidy timid tiny tough vast velvet vivid warm wary wild windy wise witty wooden young zealous
    """

_NOUN_TEXT = """
    acorn anchor anvil apron arrow attic badge bakery balcony banjo barrel basket beacon beetle bell bicycle blanket
    boat bonnet bottle boulder bracelet bridge bucket button cabin cactus camel candle canoe canyon carpet castle
    cellar chimney clock cloud compass cottage crayon cricket crown cushion dagger desert dolphin donkey drum eagle
    engine falcon feather fence fiddle forest fountain garden glacier goblet harbor helmet hammer island jacket kettle
    kitten ladder lantern lemon lighthouse locket magnet mango meadow mirror mitten monkey nugget oyster paddle
    parrot pebble pencil pepper piano pillow pirate planet pocket pony puppet quilt rabbit raft river rocket saddle
    sailor scarf shovel skillet sparrow spoon squirrel statue teapot thimble tiger tower tractor trumpet tulip turtle
    umbrella valley violin wagon walnut whistle window wizard
    """

ADJECTIVES = tuple(_ADJECTIVE_TEXT.split())
NOUNS = tuple(_NOUN_TEXT.split())
