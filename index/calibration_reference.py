"""The reference set carryd measures a model on when the corpus is too small to measure it.

`UNRELATED`: notes in the register of agent memory (a project's facts, decisions, habits,
people, errands) on subjects chosen to have nothing to do with each other, in several
languages. The cosines between any two of them are what "unrelated" looks like for a model,
measured exactly like the corpus's (`carryd.index.calibration`); the register is memory notes,
not random sentences, because a real corpus's unrelated L0s share that register and sit higher
than text from different genres.

`TRANSLATIONS`: the same note in English and in Chinese, about subjects none of `UNRELATED`
shares. A model reads Chinese when, for most pairs, an English note's nearest Chinese note is
its own translation (`reads_chinese`): a measurement of the model, not a list of model names.

Fixed data: changing a sentence changes every stored reference calibration's numbers, so the
stored record carries `REFERENCE_VERSION` and a new version is measured again.
"""

from __future__ import annotations

__all__ = ["REFERENCE_VERSION", "TRANSLATIONS", "UNRELATED"]

REFERENCE_VERSION = 1

UNRELATED: tuple[str, ...] = (
    # English
    "The staging database is rebuilt every Sunday night from the latest production snapshot.",
    "Maria prefers code review comments written as questions rather than commands.",
    "Our sourdough starter needs feeding twice a day when the kitchen is warm.",
    "The invoice for the conference booth is due at the end of March.",
    "Use tabs, not spaces, in the legacy Makefile or the build breaks.",
    "The cat is allergic to chicken, so buy the salmon food.",
    "Flight to Lisbon leaves at 7:40 from terminal 2; check in online the day before.",
    "The flaky payment test fails only when the clock crosses midnight UTC.",
    "Grandma's birthday dinner is at the Italian place on Elm Street.",
    "The team decided to drop Python 3.8 support in the next minor release.",
    "Replace the water filter in the fridge every six months.",
    "The GPU cluster queue is shortest early on Tuesday mornings.",
    "Tom is learning the cello and practises after work on Thursdays.",
    "API keys rotate automatically; never paste one into the chat.",
    "The garden hose leaks at the tap; a new washer fixes it.",
    "Quarterly planning moved from Zoom to the big meeting room.",
    "The bike's rear brake pads are worn and squeak in the rain.",
    "Logs older than thirty days are compressed and moved to cold storage.",
    "Anna recommended a thriller about a lighthouse keeper.",
    "The parking permit renewal needs a utility bill as proof of address.",
    "Frontend builds use pnpm; npm install corrupts the lockfile.",
    "The dentist appointment was moved to the 14th at half past nine.",
    "We chose PostgreSQL over MongoDB for the billing service because of transactions.",
    "The houseplants by the window need less water in winter.",
    "The release checklist lives in the wiki under Operations.",
    "My running shoes are due for replacement after about 800 km.",
    "The printer on the third floor only works with the blue cable.",
    "Customer support escalations go to Priya during the European morning.",
    "The violin recital starts at six; bring flowers for the teacher.",
    "Memory usage of the search service doubled after the cache change.",
    # German
    "Die Heizung im Büro springt erst um acht Uhr an.",
    "Der Schlüssel für den Keller hängt neben der Haustür.",
    "Für die Steuererklärung fehlen noch die Belege vom Handwerker.",
    "Das Deployment läuft nur, wenn alle Migrationen durchgelaufen sind.",
    "Am Wochenende wandern wir im Schwarzwald, Regenjacken einpacken.",
    # French
    "La réunion d'équipe du lundi commence à neuf heures et demie.",
    "Le boulanger du coin ferme le mercredi après-midi.",
    "Les sauvegardes sont chiffrées avant d'être envoyées sur le serveur distant.",
    "Penser à arroser les tomates pendant les vacances de juillet.",
    "Le contrat de location se termine à la fin de l'année.",
    # Spanish
    "El gato duerme siempre encima de la lavadora.",
    "La versión móvil de la aplicación se publica los jueves.",
    "Hay que renovar el pasaporte antes del viaje a Japón.",
    "Las pruebas de integración tardan veinte minutos en la rama principal.",
    "Mi hermana organiza la cena de Navidad este año.",
    # Portuguese, Italian, Dutch
    "O carro precisa de revisão antes da viagem para o Porto.",
    "A senha do Wi-Fi da casa de praia está colada na geladeira.",
    "La palestra chiude alle dieci di sera durante l'estate.",
    "Il certificato SSL del sito scade a novembre.",
    "De vuilnisbak wordt op dinsdagochtend geleegd.",
    "De nieuwe collega begint volgende maand bij het dataplatform.",
    # Chinese
    "周五下午三点开产品评审会，记得带原型图。",
    "家里的路由器每隔几天就要重启一次。",
    "妈妈让我周末回家帮忙修水龙头。",
    "线上日志保留九十天，超过以后自动删除。",
    "这个项目的前端用的是 Vue，后端是 Go。",
    "小区门口新开了一家卖饺子的店。",
    "下个月要去上海参加技术大会。",
    "孩子的钢琴课改到了星期三晚上。",
    "数据库连接池的上限设成了五十。",
    "阳台上的绿萝需要每周浇一次水。",
    # Japanese
    "毎朝七時に犬の散歩に行く。",
    "経費精算は月末までに提出すること。",
    "新しいサーバーは来週のメンテナンスで導入される。",
    "駅前のカフェは火曜日が定休日です。",
)

TRANSLATIONS: tuple[tuple[str, str], ...] = (
    ("The train to the airport was cancelled because of snow.", "去机场的火车因为下雪取消了。"),
    ("Remember to water the orchids on Friday.", "记得星期五给兰花浇水。"),
    ("The login page crashes when the password is empty.", "密码为空时登录页面会崩溃。"),
    ("My brother is moving to Canada next spring.", "我哥哥明年春天要搬到加拿大。"),
    ("The monthly budget meeting was cancelled.", "每月的预算会议取消了。"),
    ("She bought a red bicycle for her daughter.", "她给女儿买了一辆红色的自行车。"),
    ("The hospital visiting hours end at eight in the evening.", "医院的探视时间晚上八点结束。"),
    ("Backups of the photo library are kept on an external disk.", "照片库的备份存在移动硬盘上。"),
    ("The football match was postponed until Sunday.", "足球比赛推迟到星期天了。"),
    ("We need more coffee filters for the office kitchen.", "办公室厨房需要再买些咖啡滤纸。"),
    ("The museum is free on the first Sunday of every month.", "博物馆每个月第一个星期天免费。"),
    ("The server room air conditioner is making a loud noise.", "机房的空调噪音很大。"),
)
