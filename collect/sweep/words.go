package sweep

// promptWords are common English words, most of them one token with a
// leading space in the tokenizers of current open models. Prompts are built
// from them at random (the seed used 17 finance words); the list is long so
// that two prompts almost never agree in their first words by chance.
var promptWords = [...]string{
	"account", "act", "action", "add", "age", "agree", "air", "all", "allow", "also",
	"answer", "area", "arm", "art", "ask", "back", "bad", "bank", "base", "bear",
	"bed", "best", "big", "bill", "bit", "black", "blue", "board", "body", "book",
	"born", "both", "box", "boy", "break", "bring", "build", "busy", "buy", "call",
	"camp", "car", "card", "care", "carry", "case", "cat", "cause", "cell", "center",
	"chair", "change", "check", "child", "city", "class", "clear", "close", "cold", "color",
	"come", "cook", "cool", "copy", "corn", "cost", "count", "court", "cover", "cross",
	"cup", "cut", "dark", "data", "date", "day", "deal", "deep", "door", "down",
	"draw", "dream", "dress", "drink", "drive", "drop", "dry", "each", "early", "earth",
	"east", "easy", "eat", "edge", "egg", "end", "energy", "enough", "event", "every",
	"eye", "face", "fact", "fall", "family", "far", "farm", "fast", "father", "fear",
	"feel", "field", "fight", "fill", "film", "find", "fine", "fire", "first", "fish",
	"five", "floor", "flow", "fly", "food", "foot", "force", "form", "four", "free",
	"fresh", "friend", "front", "full", "fun", "game", "garden", "gas", "girl", "give",
	"glass", "go", "gold", "good", "great", "green", "ground", "group", "grow", "guess",
	"hair", "half", "hand", "hard", "hat", "head", "hear", "heart", "heat", "help",
	"high", "hill", "hold", "home", "hope", "horse", "hot", "hour", "house", "idea",
	"iron", "job", "join", "jump", "keep", "key", "kind", "king", "know", "land",
	"large", "last", "late", "law", "lay", "lead", "learn", "leave", "left", "leg",
	"less", "letter", "level", "lie", "life", "light", "line", "list", "little", "live",
	"long", "look", "lot", "love", "low", "main", "make", "man", "map", "mark",
	"market", "matter", "meet", "milk", "mind", "miss", "money", "month", "moon", "move",
	"music", "name", "near", "need", "new", "news", "night", "north", "note", "number",
	"ocean", "offer", "office", "oil", "old", "open", "order", "page", "paint", "paper",
	"part", "party", "pass", "pay", "people", "pick", "piece", "place", "plan", "plant",
	"play", "point", "power", "press", "price", "print", "rain", "read", "real", "red",
}
